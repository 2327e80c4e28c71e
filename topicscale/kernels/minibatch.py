"""Index bookkeeping of a minibatch in O(non-zeros + largest word id), without sorting."""
import numpy as np
from numba import njit


@njit(cache=True)
def distinct_words(indices):
    """(words, local): the ascending distinct ids in `indices` (int64) and, for each entry, the
    position of its id in `words` (int32); as np.unique(indices, return_inverse=True), in
    O(nnz + largest id)."""
    n_words = 0
    for i in range(indices.shape[0]):
        n_words = max(n_words, indices[i] + 1)
    seen = np.zeros(n_words, dtype=np.bool_)
    for i in range(indices.shape[0]):
        seen[indices[i]] = True
    slot = np.empty(n_words, dtype=np.int32)
    n = 0
    for w in range(n_words):
        if seen[w]:
            slot[w] = n
            n += 1
    words = np.empty(n, dtype=np.int64)
    for w in range(n_words):
        if seen[w]:
            words[slot[w]] = w
    local = np.empty(indices.shape[0], dtype=np.int32)
    for i in range(indices.shape[0]):
        local[i] = slot[indices[i]]
    return words, local


@njit(cache=True)
def word_major(indptr, local, n_local):
    """The minibatch transposed (CSC): (word_ptr, order, doc), where the entries of local word j
    are order[word_ptr[j]:word_ptr[j + 1]] (CSR positions, in document order, i.e. a stable
    sort of `local`) and doc[p] is the document of entry order[p]."""
    word_ptr = np.zeros(n_local + 1, dtype=np.int64)
    for i in range(local.shape[0]):
        word_ptr[local[i] + 1] += 1
    for j in range(n_local):
        word_ptr[j + 1] += word_ptr[j]
    fill = word_ptr[:-1].copy()
    order = np.empty(local.shape[0], dtype=np.int64)
    doc = np.empty(local.shape[0], dtype=np.int64)
    for d in range(indptr.shape[0] - 1):
        for i in range(indptr[d], indptr[d + 1]):
            p = fill[local[i]]
            order[p] = i
            doc[p] = d
            fill[local[i]] = p + 1
    return word_ptr, order, doc
