"""Drawing documents from the LDA generative process (Blei, Ng and Jordan 2003):
theta_d ~ Dir(alpha); for each of the document's N_d tokens z ~ Cat(theta_d), w ~ Cat(beta_z)."""
import numpy as np
from numba import njit


@njit(cache=True)
def _categorical(cumulative, u):
    """Smallest i with cumulative[i] > u * cumulative[-1] (binary search)."""
    target = u * cumulative[-1]
    lo, hi = 0, cumulative.shape[0] - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if cumulative[mid] > target:
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit(cache=True)
def draw_documents(seed, lengths, alpha, cumulative_topics, indptr, indices, counts):
    """Draw len(lengths) documents into CSR arrays (word ids sorted, counts > 0); returns nnz.

    cumulative_topics[k] is the running sum of beta_k over the vocabulary; indices and counts
    must hold sum(lengths) entries. np.random is seeded here, so a seed gives one corpus.
    """
    np.random.seed(seed)
    K = alpha.shape[0]
    theta = np.empty(K)
    cum_theta = np.empty(K)
    tokens = np.empty(lengths.max() if lengths.shape[0] else 0, dtype=np.int32)
    nnz = 0
    indptr[0] = 0
    for d in range(lengths.shape[0]):
        total = 0.0
        for k in range(K):
            theta[k] = np.random.gamma(alpha[k], 1.0)
            total += theta[k]
            cum_theta[k] = total
        n = lengths[d]
        for t in range(n):
            z = _categorical(cum_theta, np.random.random()) if total > 0 else np.random.randint(K)
            tokens[t] = _categorical(cumulative_topics[z], np.random.random())
        doc = np.sort(tokens[:n])
        for t in range(n):
            if t == 0 or doc[t] != doc[t - 1]:
                indices[nnz] = doc[t]
                counts[nnz] = 1
                nnz += 1
            else:
                counts[nnz - 1] += 1
        indptr[d + 1] = nnz
    return nnz
