"""Special functions for numba kernels (numba cannot call scipy.special).

digamma: psi(x) = psi(x + 6) - sum_{i<6} 1/(x + i), and at y = x + 6 >= 6 the asymptotic
series psi(y) ~ ln y - 1/(2y) - sum_n B_2n / (2n y^2n) is accurate to double precision.
The six reciprocals are summed as one fraction P(x)/Q(x), Q = x(x+1)...(x+5), so the
function has no data-dependent loop or branch: one division for the fraction, one for 1/y
(above 1e40, where Q would overflow, the fraction is 6/x).
"""
import numpy as np
from numba import njit, prange


@njit(cache=True, nogil=True, inline="always")
def _shifted(x):
    """(y, r) with y = x + 6 and r = -sum_{i<6} 1/(x + i) - 1/(2y) - sum_n B_2n / (2n y^2n),
    so that psi(x) = log(y) + r."""
    # P/Q = sum_{i<6} 1/(x+i): all terms positive, so no cancellation
    q01 = x * (x + 1.0)
    q23 = (x + 2.0) * (x + 3.0)
    q45 = (x + 4.0) * (x + 5.0)
    p = (2.0 * x + 1.0) * q23 * q45 + (2.0 * x + 5.0) * q01 * q45 + (2.0 * x + 9.0) * q01 * q23
    q = q01 * q23 * q45
    if x > 1e40:                # Q would overflow; the sum is 6/x to double precision
        p, q = 6.0, x
    y = x + 6.0
    inv = 1.0 / y
    inv2 = inv * inv
    series = inv2 * (1.0 / 12 - inv2 * (1.0 / 120 - inv2 * (1.0 / 252 - inv2 * (
        1.0 / 240 - inv2 * (1.0 / 132 - inv2 * (691.0 / 32760 - inv2 / 12.0))))))
    return y, -p / q - 0.5 * inv - series


@njit(cache=True, nogil=True)
def digamma(x):
    """psi(x) for x > 0 (returns nan for x <= 0 or nan)."""
    if not x > 0.0:
        return np.nan
    y, r = _shifted(x)
    return np.log(y) + r


@njit(cache=True, nogil=True)
def exp_digamma(x):
    """exp(psi(x)) = y exp(r) (see _shifted): one exp, no log. nan for x <= 0."""
    if not x > 0.0:
        return np.nan
    y, r = _shifted(x)
    return y * np.exp(r)


@njit(cache=True, nogil=True)
def exp_dirichlet_expectation(gamma, out):
    """out_k = exp(E[log theta_k]) = exp(psi(gamma_k) - psi(sum_j gamma_j)), theta ~ Dir(gamma).

    For sum_j gamma_j >= 1 (always, once a document has a token), with psi(x) = log(y) + r
    (see _shifted) this is (y_k / y_sum) exp(r_k - r_sum): one exp per topic and no log, and
    the first loop (divisions and polynomials, no branches) vectorises. exp(psi(x))
    underflows to 0 for tiny x, which is the right limit. Below 1 the difference of digammas
    is used.
    """
    K = gamma.shape[0]
    total = 0.0
    for k in range(K):
        total += gamma[k]
    if total >= 1.0:
        y_sum, r_sum = _shifted(total)
        for k in range(K):
            out[k] = _shifted(gamma[k])[1] - r_sum
        inv = 1.0 / y_sum
        for k in range(K):
            out[k] = (gamma[k] + 6.0) * inv * np.exp(out[k])
    else:
        psi_total = digamma(total)
        for k in range(K):
            out[k] = np.exp(digamma(gamma[k]) - psi_total)


@njit(cache=True, nogil=True)
def digamma_array(x):
    """Elementwise digamma of a 1-d or 2-d C-contiguous array."""
    flat = x.ravel()
    out = np.empty_like(flat)
    for i in range(flat.shape[0]):
        out[i] = digamma(flat[i])
    return out.reshape(x.shape)


@njit(parallel=True, cache=True)
def exp_elog_rows(lam, rows, out):
    """out[i, k] = exp(E[log beta_k, rows[i]]) = exp(psi(lam[rows[i], k]) - psi(sum_w lam[w, k]))
    for a word-major lam (V x K); rows in parallel. When every column sum is >= 1 (always in
    practice), as exp_digamma(lam) / exp_digamma(sum): one exp per entry, no log."""
    V, K = lam.shape
    total = np.zeros(K)
    for w in range(V):
        for k in range(K):
            total[k] += lam[w, k]
    ratio = True
    for k in range(K):
        ratio = ratio and total[k] >= 1.0
    scale = np.empty(K)
    for k in range(K):
        scale[k] = 1.0 / exp_digamma(total[k]) if ratio else digamma(total[k])
    for i in prange(rows.shape[0]):
        row = lam[rows[i]]
        if ratio:
            for k in range(K):
                out[i, k] = exp_digamma(row[k]) * scale[k]
        else:
            for k in range(K):
                out[i, k] = np.exp(digamma(row[k]) - scale[k])
