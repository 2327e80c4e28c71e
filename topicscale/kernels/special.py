"""Special functions for numba kernels (numba cannot call scipy.special).

digamma: the recurrence psi(x) = psi(x + 1) - 1/x lifts x above 6, where the
asymptotic series psi(x) ~ ln x - 1/(2x) - sum_n B_2n / (2n x^2n) is accurate to
double precision.
"""
import numpy as np
from numba import njit


@njit(cache=True, nogil=True, inline="always")
def _shifted(x):
    """(y, r) with y = x + n >= 6 and r = -sum_{i<n} 1/(x + i) - 1/(2y) - sum_n B_2n / (2n y^2n),
    so that psi(x) = log(y) + r."""
    r = 0.0
    while x < 6.0:
        r -= 1.0 / x
        x += 1.0
    inv = 1.0 / x
    inv2 = inv * inv
    series = inv2 * (1.0 / 12 - inv2 * (1.0 / 120 - inv2 * (1.0 / 252 - inv2 * (
        1.0 / 240 - inv2 * (1.0 / 132 - inv2 * (691.0 / 32760 - inv2 / 12.0))))))
    return x, r - 0.5 * inv - series


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

    For sum_j gamma_j >= 1 (always, once a document has a token) this is computed as
    exp(psi(gamma_k)) / exp(psi(sum)), saving a log per topic; exp(psi(x)) underflows to 0
    for tiny x, which is the right limit. Below 1 the difference of digammas is used.
    """
    total = 0.0
    for k in range(gamma.shape[0]):
        total += gamma[k]
    if total >= 1.0:
        inv = 1.0 / exp_digamma(total)
        for k in range(gamma.shape[0]):
            out[k] = exp_digamma(gamma[k]) * inv
    else:
        psi_total = digamma(total)
        for k in range(gamma.shape[0]):
            out[k] = np.exp(digamma(gamma[k]) - psi_total)


@njit(cache=True, nogil=True)
def digamma_array(x):
    """Elementwise digamma of a 1-d or 2-d C-contiguous array."""
    flat = x.ravel()
    out = np.empty_like(flat)
    for i in range(flat.shape[0]):
        out[i] = digamma(flat[i])
    return out.reshape(x.shape)
