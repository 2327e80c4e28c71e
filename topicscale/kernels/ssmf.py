"""Kernels of full structured stochastic mean-field (SSMF, Hoffman and Blei 2015, Algorithm 1,
applied to LDA in sec. 3): the derivative of the gamma quantile function with respect to its
shape (eqs. 15-16, through the CDF) and the trigamma function psi' (the Fisher matrix of the
Dirichlet, eq. 38).

Quantile derivative. For G ~ Gamma(a, 1) drawn as G = R(u, a) (inversion, eq. 12), eq. 15 gives
dR/da = -(dQ/da)(G, a) / q(G; a), with Q the CDF (the regularised lower incomplete gamma
function P(a, x)) and q the density. We return its logarithmic form

    h(a, log x) = d log R / d a = -(dP/da)(x, a) / (x q(x; a)),

computed from log x so that a draw that underflows (shapes near eta = 0.01 give x = 1e-300
and smaller) still has its derivative. dP/da is differentiated analytically, not by finite
differences (tests/reference.py checks it against finite differences of scipy's gammainc):

* x < a + 1, the series P = x^a e^-x / Gamma(a + 1) * M, M = sum_n x^n / ((a + 1)...(a + n)).
  Since x q(x) = x^a e^-x / Gamma(a), P / (x q) = M / a, and with M_a = dM/da =
  -sum_n x^n / ((a + 1)...(a + n)) * sum_{i <= n} 1 / (a + i):
      h = -(M (log x - psi(a + 1)) + M_a) / a.
  For a tiny x, M = 1 and M_a = 0: h = -(log x - psi(a + 1)) / a, with no exp(log x) needed.
* x >= a + 1, the continued fraction of the upper function 1 - P = x^a e^-x / Gamma(a) * CF
  (CF = 1/(x+1-a-) 1(1-a)/(x+3-a-) 2(2-a)/(x+5-a-) ..., modified Lentz), carried with its
  derivative CF_a in a, so
      h = CF (log x - psi(a)) + CF_a.

The draw itself need not come from inversion (footnote 2 of the paper): any exact Gamma(a, 1)
draw x has u = P(a, x) uniform, and h evaluated at x is the derivative inversion would give at
that u, so the gradient estimate has the paper's distribution.
"""
import numpy as np
from numba import njit, prange

from .special import digamma

EPS = 1e-16
FPMIN = 1e-300
MAX_TERMS = 1_000_000


@njit(cache=True, nogil=True)
def trigamma(x):
    """psi'(x) for x > 0 (nan otherwise): the recurrence psi'(x) = psi'(x + 1) + 1/x^2 lifts x
    above 10, where the asymptotic series 1/x + 1/(2x^2) + sum_k B_2k / x^(2k+1) (to B_14)
    is accurate to double precision."""
    if not x > 0.0:
        return np.nan
    r = 0.0
    while x < 10.0:
        r += 1.0 / (x * x)
        x += 1.0
    inv = 1.0 / x
    inv2 = inv * inv
    series = inv * (1.0 + inv * (0.5 + inv * (1.0 / 6.0 - inv2 * (1.0 / 30.0 - inv2 * (
        1.0 / 42.0 - inv2 * (1.0 / 30.0 - inv2 * (5.0 / 66.0 - inv2 * (
            691.0 / 2730.0 - inv2 * 7.0 / 6.0))))))))
    return r + series


@njit(cache=True, nogil=True)
def dlog_quantile_dshape(a, log_x):
    """h = d log R(u, a) / d a at the quantile x = exp(log_x) of Gamma(a, 1) (see the module
    docstring). 0 for log_x = -inf (an exact zero draw, probability 2^-53 per entry: no
    derivative); nan for a <= 0."""
    if not a > 0.0:
        return np.nan
    if log_x == -np.inf:
        return 0.0
    x = np.exp(log_x)
    if x < a + 1.0:
        t = 1.0
        s = 0.0
        m = 1.0
        m_a = 0.0
        for n in range(1, MAX_TERMS):
            inv = 1.0 / (a + n)
            t *= x * inv
            s += inv
            m += t
            m_a -= t * s
            if t <= EPS * m and t * s <= EPS * abs(m_a):
                break
        return -(m * (log_x - digamma(a + 1.0)) + m_a) / a
    # modified Lentz on the continued fraction, each quantity with its derivative in a
    b = x + 1.0 - a
    db = -1.0
    c = 1.0 / FPMIN
    dc = 0.0
    d = 1.0 / b
    dd = -db / (b * b)
    h = d
    dh = dd
    for i in range(1, MAX_TERMS):
        an = -i * (i - a)
        dan = float(i)
        b += 2.0
        dd = dan * d + an * dd + db
        d = an * d + b
        if abs(d) < FPMIN:
            d = FPMIN
        dc = db + dan / c - an * dc / (c * c)
        c = b + an / c
        if abs(c) < FPMIN:
            c = FPMIN
        dd = -dd / (d * d)
        d = 1.0 / d
        delta = d * c
        ddelta = dd * c + d * dc
        dh = dh * delta + h * ddelta
        h = h * delta
        if abs(delta - 1.0) <= EPS and abs(h * ddelta) <= EPS * abs(dh):
            break
    psi_a = digamma(a + 1.0) - 1.0 / a
    return h * (log_x - psi_a) + dh


@njit(parallel=True, cache=True)
def dlog_quantile_dshape_array(shapes, log_x, out):
    """out[i, j] = dlog_quantile_dshape(shapes[i, j], log_x[i, j]), rows in parallel (each
    entry is computed alone, so results do not depend on threads)."""
    for i in prange(shapes.shape[0]):
        for j in range(shapes.shape[1]):
            out[i, j] = dlog_quantile_dshape(shapes[i, j], log_x[i, j])


@njit(parallel=True, cache=True)
def trigamma_array(x, out):
    """out[i, j] = psi'(x[i, j]) for a 2-d array, rows in parallel."""
    for i in prange(x.shape[0]):
        for j in range(x.shape[1]):
            out[i, j] = trigamma(x[i, j])
