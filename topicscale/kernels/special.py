"""Special functions for numba kernels (numba cannot call scipy.special).

digamma: the recurrence psi(x) = psi(x + 1) - 1/x lifts x above 6, where the
asymptotic series psi(x) ~ ln x - 1/(2x) - sum_n B_2n / (2n x^2n) is accurate to
double precision.
"""
import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def digamma(x):
    """psi(x) for x > 0 (returns nan for x <= 0 or nan)."""
    if not x > 0.0:
        return np.nan
    shift = 0.0
    while x < 6.0:
        shift -= 1.0 / x
        x += 1.0
    inv = 1.0 / x
    inv2 = inv * inv
    series = inv2 * (1.0 / 12 - inv2 * (1.0 / 120 - inv2 * (1.0 / 252 - inv2 * (
        1.0 / 240 - inv2 * (1.0 / 132 - inv2 * (691.0 / 32760 - inv2 / 12.0))))))
    return shift + np.log(x) - 0.5 * inv - series


@njit(cache=True, nogil=True)
def exp_dirichlet_expectation(gamma, out):
    """out_k = exp(E[log theta_k]) = exp(psi(gamma_k) - psi(sum_j gamma_j)) for theta ~ Dir(gamma)."""
    total = 0.0
    for k in range(gamma.shape[0]):
        total += gamma[k]
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
