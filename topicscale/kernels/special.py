"""Special functions for numba kernels (numba cannot call scipy.special).

digamma: psi(x) = psi(x + 6) - sum_{i<6} 1/(x + i), and at y = x + 6 >= 6 the asymptotic
series psi(y) ~ ln y - 1/(2y) - sum_n B_2n / (2n y^2n) is accurate to double precision.
The six reciprocals are summed as one fraction P(x)/Q(x), Q = x(x+1)...(x+5), so the
function has no data-dependent loop or branch: one division for the fraction, one for 1/y
(above 1e40, where Q would overflow, the fraction is 6/x).

exp: numba's np.exp is a call into libm per element, which keeps loops over topics scalar;
`vexp` is exp as straight-line arithmetic (Cody-Waite reduction, degree-13 Taylor polynomial,
exponent by bit pattern), so such loops vectorise. Within about 1 ulp of np.exp from -708 to
709.78 (the test allows 2); exp(x) = 0 for x <= -708 (np.exp gives at most 3.3e-308 there), inf
above 709.78, nan for nan.
"""
import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.extending import intrinsic


@intrinsic
def _as_float(typingctx, bits):
    """The float64 whose bit pattern is the int64 `bits`."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())
    return types.float64(types.int64), codegen


@intrinsic
def _as_bits(typingctx, x):
    """The bit pattern (int64) of the float64 x."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))
    return types.int64(types.float64), codegen


_ROUNDER = 6755399441055744.0          # 1.5 * 2^52: t + _ROUNDER rounds t to an integer in the low bits
_LOG2E = 1.4426950408889634
_LN2_HI = 0.6931471803691238           # ln 2 = _LN2_HI + _LN2_LO (Cody-Waite)
_LN2_LO = 1.9082149292705877e-10


@njit(error_model="numpy", cache=True, nogil=True, inline="always")
def vexp(x):
    """exp(x) = 2^n exp(r), n = round(x / ln 2), |r| <= ln 2 / 2 (see the module docstring)."""
    xc = min(max(x, -708.0), 710.0)
    t = xc * _LOG2E + _ROUNDER
    n = t - _ROUNDER
    r = (xc - n * _LN2_HI) - n * _LN2_LO
    p = 1.0 + r * (1.0 + r * (1.0 / 2 + r * (1.0 / 6 + r * (1.0 / 24 + r * (1.0 / 120 + r * (1.0 / 720 + r * (
        1.0 / 5040 + r * (1.0 / 40320 + r * (1.0 / 362880 + r * (1.0 / 3628800 + r * (1.0 / 39916800 + r * (
        1.0 / 479001600 + r / 6227020800.0))))))))))))
    # 2^n as 2^(n-1) * 2, so that n = 1024 (x near the overflow threshold) still has a bit pattern
    y = p * _as_float((_as_bits(t) - _as_bits(_ROUNDER) + 1022) << 52) * 2.0
    return y if x > -708.0 else (0.0 if x <= -708.0 else x)


@njit(error_model="numpy", cache=True, nogil=True, inline="always")
def _shifted(x):
    """(y, r) with y = x + 6 and r = -sum_{i<6} 1/(x + i) - 1/(2y) - sum_n B_2n / (2n y^2n),
    so that psi(x) = log(y) + r."""
    # P/Q = sum_{i<6} 1/(x+i): all terms positive, so no cancellation
    q01 = x * (x + 1.0)
    q23 = (x + 2.0) * (x + 3.0)
    q45 = (x + 4.0) * (x + 5.0)
    p = (2.0 * x + 1.0) * q23 * q45 + (2.0 * x + 5.0) * q01 * q45 + (2.0 * x + 9.0) * q01 * q23
    q = q01 * q23 * q45
    if x > 1e40:                # the sum is 6/x to double precision (and Q overflows near 1e51)
        p, q = 6.0, x
    y = x + 6.0
    inv = 1.0 / y
    inv2 = inv * inv
    series = inv2 * (1.0 / 12 - inv2 * (1.0 / 120 - inv2 * (1.0 / 252 - inv2 * (
        1.0 / 240 - inv2 * (1.0 / 132 - inv2 * (691.0 / 32760 - inv2 / 12.0))))))
    return y, -p / q - 0.5 * inv - series


@njit(error_model="numpy", cache=True, nogil=True)
def digamma(x):
    """psi(x) for x > 0 (returns nan for x <= 0 or nan)."""
    if not x > 0.0:
        return np.nan
    y, r = _shifted(x)
    return np.log(y) + r


@njit(error_model="numpy", cache=True, nogil=True)
def exp_digamma(x):
    """exp(psi(x)) = y exp(r) (see _shifted): one exp, no log, no branch. nan for x <= 0."""
    y, r = _shifted(x)
    return y * vexp(r) if x > 0.0 else np.nan


@njit(error_model="numpy", cache=True, nogil=True)
def exp_dirichlet_expectation(gamma, out):
    """out_k = exp(E[log theta_k]) = exp(psi(gamma_k) - psi(sum_j gamma_j)), theta ~ Dir(gamma),
    for gamma > 0 (the E-step keeps gamma >= alpha > 0).

    For sum_j gamma_j >= 1 (always, once a document has a token), with psi(x) = log(y) + r
    (see _shifted) this is (y_k / y_sum) exp(r_k - r_sum): one exp per topic and no log, and
    both loops (divisions, polynomials and vexp, no branches) vectorise. exp(psi(x))
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
            out[k] = (gamma[k] + 6.0) * inv * vexp(out[k])
    else:
        psi_total = digamma(total)
        for k in range(K):
            out[k] = np.exp(digamma(gamma[k]) - psi_total)


@njit(error_model="numpy", cache=True, nogil=True)
def digamma_array(x):
    """Elementwise digamma of a 1-d or 2-d C-contiguous array."""
    flat = x.ravel()
    out = np.empty_like(flat)
    for i in range(flat.shape[0]):
        out[i] = digamma(flat[i])
    return out.reshape(x.shape)


@njit(error_model="numpy", parallel=True, cache=True)
def exp_elog_rows(lam, total, rows, out):
    """out[i, k] = exp(E[log beta_k, rows[i]]) = exp(psi(lam[rows[i], k]) - psi(total[k])) for a
    word-major lam (V x K) with column sums total (topic_matrix.column_sums); rows in parallel.
    When every column sum is >= 1 (always in practice), as exp_digamma(lam) / exp_digamma(sum): one
    exp per entry, no log."""
    K = lam.shape[1]
    ratio = True
    for k in range(K):
        ratio = ratio and total[k] >= 1.0
    scale = np.empty(K)
    for k in range(K):
        scale[k] = 1.0 / exp_digamma(total[k]) if ratio else digamma(total[k])
    for i in prange(rows.shape[0]):
        row = lam[rows[i]]
        if ratio:
            for k in range(K):         # exp_digamma(row[k]) * scale[k], inlined so that it vectorises
                x = row[k]
                y, r = _shifted(x)
                out[i, k] = y * vexp(r) * scale[k] if x > 0.0 else np.nan
        else:
            for k in range(K):
                out[i, k] = np.exp(digamma(row[k]) - scale[k])
