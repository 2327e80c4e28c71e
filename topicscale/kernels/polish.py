"""Batch collapsed variational Bayes (CVB0) sweeps over a whole corpus (Asuncion, Welling, Smyth and
Teh 2009, "On smoothing and inference for topic models", eq. 5; Teh, Newman and Welling 2007).

Every entry p (document d, word w, count m) keeps its responsibilities resp[p, k] (float32). The
counts they imply are n_wk = sum_p m resp[p, k] over the entries of word w, n_k = sum_w n_wk and
n_dk = sum_p m resp[p, k] over the entries of document d. A sweep visits the entries in corpus
order and replaces each entry's responsibilities by

    resp[p, k]  proportional to  (n_wk^-p + eta) / (n_k^-p + V eta) * (n_dk^-p + alpha_k),

the counts ^-p without the entry's own share, updating the counts at once (a Gauss-Seidel sweep:
the next entry sees them). n_dk is summed from resp when a document starts, so only the word
counts n_wk (V x K) and resp are kept.
"""
import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def document_responsibilities(indptr, indices, counts, topics, alpha, sweeps, resp):
    """resp of every entry from fixed topics (V x K, E[beta]): CVB0 of each document alone,
    n_dk starting at the document's length / K, `sweeps` sweeps over its entries."""
    K = topics.shape[1]
    g = np.empty(K)
    n_dk = np.empty(K)
    for d in range(indptr.shape[0] - 1):
        length = 0.0
        for p in range(indptr[d], indptr[d + 1]):
            length += counts[p]
            for k in range(K):
                resp[p, k] = np.float32(1.0 / K)
        for k in range(K):
            n_dk[k] = length / K
        for _ in range(sweeps):
            for p in range(indptr[d], indptr[d + 1]):
                w, m = indices[p], counts[p]
                total = 0.0
                for k in range(K):
                    n_dk[k] -= m * resp[p, k]
                    g[k] = topics[w, k] * (max(n_dk[k], 0.0) + alpha[k])
                    total += g[k]
                for k in range(K):
                    resp[p, k] = np.float32(g[k] / total)
                    n_dk[k] += m * resp[p, k]


@njit(cache=True, nogil=True)
def add_word_counts(indices, counts, resp, n_wk):
    """n_wk[w, k] += m resp[p, k] over the entries p (word w, count m)."""
    for p in range(indices.shape[0]):
        w, m = indices[p], counts[p]
        for k in range(n_wk.shape[1]):
            n_wk[w, k] += m * resp[p, k]


@njit(cache=True, nogil=True)
def sweep(indptr, indices, counts, resp, n_wk, n_k, alpha, eta):
    """One batch CVB0 sweep over a block of documents (the module's update), in place on resp,
    n_wk and n_k."""
    K = n_k.shape[0]
    v_eta = n_wk.shape[0] * eta
    g = np.empty(K)
    n_dk = np.empty(K)
    for d in range(indptr.shape[0] - 1):
        n_dk[:] = 0.0
        for p in range(indptr[d], indptr[d + 1]):
            for k in range(K):
                n_dk[k] += counts[p] * resp[p, k]
        for p in range(indptr[d], indptr[d + 1]):
            w, m = indices[p], counts[p]
            total = 0.0
            for k in range(K):
                share = m * resp[p, k]
                n_dk[k] -= share
                n_wk[w, k] -= share
                n_k[k] -= share
                g[k] = (max(n_wk[w, k], 0.0) + eta) / (n_k[k] + v_eta) * (max(n_dk[k], 0.0) + alpha[k])
                total += g[k]
            for k in range(K):
                new = np.float32(g[k] / total)
                resp[p, k] = new
                share = m * new
                n_wk[w, k] += share
                n_k[k] += share
                n_dk[k] += share
