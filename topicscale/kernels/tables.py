"""Expected table counts of the Chinese restaurant franchise from a document's topic counts.

Direct-assignment view of the HDP (Teh, Jordan, Beal and Blei 2006, sec. 5.3): a document's
theta_d ~ Dir(a), a_k = alpha0 sigma_k; given n_dk tokens of topic k, the number of tables m_dk
serving it has expectation (Antoniak 1974; Teh, Kurihara and Welling 2008, sec. 4)

    E[m_dk | n_dk] = sum_{j=0}^{n_dk - 1} a_k / (a_k + j) = a_k (psi(a_k + n_dk) - psi(a_k)).

A document step gives only the expected count n_dk = gamma_dk - a_k, spread as small
probabilities over many tokens. The formula at that mean counts about one table for any n_dk
well above a_k (a_k = 0.01, n_dk = 0.05: 0.84 tables), so every topic a document touches would
look used. We take the count's randomness into account as the occupancy of the topic:

    q_dk = P(n_dk > 0) ~ 1 - exp(-n_dk)          (Poisson approximation of the token indicators)
    E[m_dk] ~ q_dk a_k (psi(a_k + n_dk / q_dk) - psi(a_k))   (Antoniak at the count given n_dk > 0)

which is about n_dk for a topic holding a fraction of a token, and Antoniak's expectation for a
topic holding many. The corpus sticks are conditioned on sum_d m_dk (global_steps/hdp.py).
"""
import numpy as np
from numba import njit

from .special import digamma


@njit(cache=True, nogil=True)
def expected_tables(gamma, prior, out):
    """out[k] = sum over the rows d of gamma (D x K, gamma_dk = prior_k + n_dk) of
    q a (psi(a + n / q) - psi(a)) with a = prior[k], n = gamma[d, k] - a, q = 1 - exp(-n)
    (module docstring); n <= 0 adds nothing. Summed in row order."""
    D, K = gamma.shape
    base = np.empty(K)
    for k in range(K):
        base[k] = digamma(prior[k])
        out[k] = 0.0
    for d in range(D):
        row = gamma[d]
        for k in range(K):
            a = prior[k]
            n = row[k] - a
            if n > 0.0:
                q = -np.expm1(-n)
                out[k] += q * a * (digamma(a + n / q) - base[k])
