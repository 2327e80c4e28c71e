"""Document completion's split of a document's distinct words into an observed and a held-out
half (evaluate.split_block), per document in compiled code: sorting each document's few entries
costs less than one lexsort of a whole block's entries by (document, key)."""
import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def observed_entries(indptr, keys):
    """observed[p]: entry p is among the first length // 2 entries of its document ordered by
    `keys` (a stable sort: ties keep entry order), for documents of two entries or more."""
    observed = np.zeros(keys.shape[0], dtype=np.bool_)
    for d in range(indptr.shape[0] - 1):
        start, end = indptr[d], indptr[d + 1]
        if end - start < 2:
            continue
        order = np.argsort(keys[start:end], kind="mergesort")
        for i in range((end - start) // 2):
            observed[start + order[i]] = True
    return observed
