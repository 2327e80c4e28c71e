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

Single precision (the training E-step's lanes, kernels.meanfield): `exp_dirichlet_lanes` writes
exp(E[log theta]) in the precision of its output. In float32 it runs the same formulas with
float32 arithmetic (degree-7 exp polynomial, three series terms, 8 lanes a vector instead of 4):
about 2.3x faster; its relative error, a few float32 roundings of psi(gamma_k), is below 1e-6
for gamma_k >= 0.5 (below 3e-5 where gamma_k is near alpha and the value is under 1e-20).
"""
import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.extending import intrinsic, overload


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


@intrinsic
def _as_float32(typingctx, bits):
    """The float32 whose bit pattern is the int32 `bits`."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.FloatType())
    return types.float32(types.int32), codegen


@intrinsic
def _as_bits32(typingctx, x):
    """The bit pattern (int32) of the float32 x."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(32))
    return types.int32(types.float32), codegen


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
def exp_elog_rows(lam, total, rows, out, scale=1.0, shift=0.0):
    """out[i, k] = exp(E[log beta_k, rows[i]]) = exp(psi(lambda[rows[i], k]) - psi(total[k])) for a
    word-major lambda = scale * lam + shift (V x K) with column sums total; rows in parallel.
    When every column sum is >= 1 (always in practice), as exp_digamma(lambda) / exp_digamma(sum): one
    exp per entry, no log."""
    K = lam.shape[1]
    ratio = True
    for k in range(K):
        ratio = ratio and total[k] >= 1.0
    inverse = np.empty(K)          # 1 / exp(psi(total)), or psi(total) when not ratio
    for k in range(K):
        inverse[k] = 1.0 / exp_digamma(total[k]) if ratio else digamma(total[k])
    for i in prange(rows.shape[0]):
        row = lam[rows[i]]
        if ratio:
            for k in range(K):         # exp_digamma(x) * inverse[k], inlined so that it vectorises
                x = scale * row[k] + shift
                y, r = _shifted(x)
                out[i, k] = y * vexp(r) * inverse[k] if x > 0.0 else np.nan
        else:
            for k in range(K):
                out[i, k] = np.exp(digamma(scale * row[k] + shift) - inverse[k])


SUM_CHUNKS = 16


@njit(error_model="numpy", parallel=True, cache=True)
def sum_digamma(x):
    """sum of psi(x) over a 2-d C-contiguous array of positive values: its rows in SUM_CHUNKS
    ranges summed side by side, the ranges' sums then added in order (the same bits on any
    number of threads)."""
    V = x.shape[0]
    parts = np.empty(SUM_CHUNKS)
    for c in prange(SUM_CHUNKS):
        s = 0.0
        for i in range(V * c // SUM_CHUNKS, V * (c + 1) // SUM_CHUNKS):
            for k in range(x.shape[1]):
                s += digamma(x[i, k])
        parts[c] = s
    total = 0.0
    for c in range(SUM_CHUNKS):
        total += parts[c]
    return total


# float32 constants: numba computes float32 op float64 in float64, so every literal of the
# single-precision functions below is a float32 global
F32 = np.float32
_ROUNDER32 = F32(12582912.0)                              # 1.5 * 2^23
_ROUNDER32_BITS = np.int32(np.array(12582912.0, np.float32).view(np.int32))
_LOG2E32 = F32(_LOG2E)
_LN2_HI32 = F32(0.693145751953125)                        # 12 significant bits: n * _LN2_HI32 is exact
_LN2_LO32 = F32(1.4286068203094173e-06)
_EXP32_LOW, _EXP32_HIGH = F32(-87.0), F32(88.8)           # exp(-87) is near float32's smallest normal
_ZERO32, _HALF32, _ONE32, _TWO32, _SIX32 = F32(0.0), F32(0.5), F32(1.0), F32(2.0), F32(6.0)
_TAYLOR32 = (F32(1 / 6), F32(1 / 24), F32(1 / 120), F32(1 / 720), F32(1 / 5040))
_SERIES32 = (F32(1 / 12), F32(1 / 120), F32(1 / 252))
_LARGE32 = F32(1e5)           # above it the shift sum is 6/x (error 15/x^2 < 2e-9), before Q = x^6 overflows


@njit(error_model="numpy", cache=True, nogil=True, inline="always")
def vexp32(x):
    """exp(x) for float32 x, as vexp (2^n exp(r), |r| <= ln 2 / 2) with a degree-7 Taylor
    polynomial: within 1 ulp of exp; 0 for x <= -87, inf above 88.7, nan for nan."""
    c3, c4, c5, c6, c7 = _TAYLOR32
    xc = min(max(x, _EXP32_LOW), _EXP32_HIGH)
    t = xc * _LOG2E32 + _ROUNDER32
    n = t - _ROUNDER32
    r = (xc - n * _LN2_HI32) - n * _LN2_LO32
    p = _ONE32 + r * (_ONE32 + r * (_HALF32 + r * (c3 + r * (c4 + r * (c5 + r * (c6 + r * c7))))))
    # 2^n as 2^(n-1) * 2, so that n = 128 (x near the overflow threshold) still has a bit pattern
    y = p * _as_float32((_as_bits32(t) - _ROUNDER32_BITS + 126) << 23) * _TWO32
    return y if x > _EXP32_LOW else (_ZERO32 if x <= _EXP32_LOW else x)


@njit(error_model="numpy", cache=True, nogil=True, inline="always")
def _shifted_remainder32(x):
    """r of _shifted in float32 (psi(x) = log(x + 6) + r), with the series to y^-6."""
    s1, s2, s3 = _SERIES32
    q01 = x * (x + _ONE32)
    q23 = (x + _TWO32) * (x + F32(3.0))
    q45 = (x + F32(4.0)) * (x + F32(5.0))
    p = ((_TWO32 * x + _ONE32) * q23 * q45 + (_TWO32 * x + F32(5.0)) * q01 * q45
         + (_TWO32 * x + F32(9.0)) * q01 * q23)
    q = q01 * q23 * q45
    if x > _LARGE32:
        p, q = _SIX32, x
    inv = _ONE32 / (x + _SIX32)
    inv2 = inv * inv
    return -p / q - _HALF32 * inv - inv2 * (s1 - inv2 * (s2 - inv2 * s3))


@njit(error_model="numpy", cache=True, nogil=True, fastmath={"contract"})
def exp_dirichlet_expectation32(gamma, out):
    """exp_dirichlet_expectation into a float32 out: psi(sum_j gamma_j) in float64 (once), each
    topic in float32 (see the module docstring). The sum runs in four partial sums. Multiply-adds
    are fused (fastmath "contract" only: the polynomials' chains halve; on GCIDE this made the
    single-precision E-step 4-7% faster)."""
    K = gamma.shape[0]
    K4 = K - K % 4
    t0 = t1 = t2 = t3 = 0.0
    for k in range(0, K4, 4):
        t0 += gamma[k]
        t1 += gamma[k + 1]
        t2 += gamma[k + 2]
        t3 += gamma[k + 3]
    for k in range(K4, K):
        t0 += gamma[k]
    total = (t0 + t1) + (t2 + t3)
    if total < 1.0:
        psi_total = digamma(total)
        for k in range(K):
            out[k] = F32(np.exp(digamma(gamma[k]) - psi_total))
        return
    y_sum, r_sum = _shifted(total)
    r_sum32 = F32(r_sum)
    inv = F32(1.0 / y_sum)
    for k in range(K):
        out[k] = F32(gamma[k])
    for k in range(K):
        x = out[k]
        out[k] = (x + _SIX32) * inv * vexp32(_shifted_remainder32(x) - r_sum32)


def exp_dirichlet_lanes(gamma, out):
    """exp(E[log theta]) of gamma (float64) in the precision of out: exp_dirichlet_expectation
    for float64, exp_dirichlet_expectation32 for float32. Kernels resolve it at compile time."""
    if out.dtype == np.float32:
        exp_dirichlet_expectation32(gamma, out)
    else:
        exp_dirichlet_expectation(gamma, out)


@overload(exp_dirichlet_lanes, jit_options={"error_model": "numpy", "nogil": True})
def _exp_dirichlet_lanes_kernel(gamma, out):
    if out.dtype == types.float32:
        return lambda gamma, out: exp_dirichlet_expectation32(gamma, out)
    return lambda gamma, out: exp_dirichlet_expectation(gamma, out)
