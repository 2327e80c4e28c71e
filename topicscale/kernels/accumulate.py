"""Fold per-entry topic vectors of a minibatch into per-word statistics, deterministically."""
from numba import njit, prange

from .prefetch import PREFETCH_AHEAD, prefetch_row


@njit(parallel=True, cache=True)
def add_entries_by_word(word_ptr, entry_order, entry_rows, out, overwrite):
    """out[j] += sum of entry_rows[entry_order[p]] for p in word_ptr[j] .. word_ptr[j + 1]; with
    overwrite, out[j] = that sum (0 for a word without entries), so out may come uninitialised.

    The entries are given grouped by word (CSC order: entry_order lists the CSR entries of
    local word j, in document order, at word_ptr[j]:word_ptr[j + 1]), so each row of `out` is
    owned by one thread and summed in a fixed order, whatever the thread count. The entry vectors
    are gathered scattered in memory, so they are prefetched. (Overwriting spares the caller
    np.zeros: on GCIDE its fresh pages, faulted in here, cost more than the sums.)
    """
    K = out.shape[1]
    n = entry_order.shape[0]
    for j in prange(out.shape[0]):
        row = out[j]
        if overwrite:
            for k in range(K):
                row[k] = 0.0
        for p in range(word_ptr[j], word_ptr[j + 1]):
            if p + PREFETCH_AHEAD < n:
                prefetch_row(entry_rows, entry_order[p + PREFETCH_AHEAD])
            e = entry_rows[entry_order[p]]
            for k in range(K):
                row[k] += e[k]
