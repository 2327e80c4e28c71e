"""Slow, plain-numpy twins of the numba kernels (the kernels are tested against these)."""
import numpy as np
from scipy.special import digamma


def estep_document(ids, counts, topics, alpha, max_iter, tol):
    """Mean-field E-step of one document (SVI paper eqs. 33-34), phi kept explicitly."""
    K = topics.shape[1]
    gamma = np.ones(K)
    B = topics[ids]                                           # n x K
    for _ in range(max_iter):
        last = gamma.copy()
        elog_theta = digamma(gamma) - digamma(gamma.sum())
        phi = np.exp(elog_theta)[None, :] * B
        phi /= phi.sum(axis=1, keepdims=True)
        gamma = alpha + counts @ phi
        if np.mean(np.abs(gamma - last)) < tol:
            break
    exp_elog_theta = np.exp(digamma(gamma) - digamma(gamma.sum()))
    phi = exp_elog_theta[None, :] * B
    phi /= phi.sum(axis=1, keepdims=True)
    return gamma, exp_elog_theta, phi


def minibatch_statistics(indptr, indices, counts, topics, alpha, max_iter, tol, n_words):
    """sum_d sum_n c_dn phi_dnk per word (V x K) and the gammas (D x K)."""
    stats = np.zeros((n_words, topics.shape[1]))
    gammas = []
    for d in range(len(indptr) - 1):
        ids, cts = indices[indptr[d]:indptr[d + 1]], counts[indptr[d]:indptr[d + 1]]
        gamma, _, phi = estep_document(ids, cts, topics, alpha, max_iter, tol)
        np.add.at(stats, ids, cts[:, None] * phi)
        gammas.append(gamma)
    return stats, np.array(gammas)


def completion_log_likelihood(indptr, indices, counts, theta, topics):
    return np.array([counts[a:b] @ np.log(topics[indices[a:b]] @ theta[d])
                     for d, (a, b) in enumerate(zip(indptr[:-1], indptr[1:]))])
