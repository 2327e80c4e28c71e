"""Fold per-entry topic vectors of a minibatch into per-word statistics, deterministically."""
from numba import njit, prange


@njit(parallel=True, cache=True)
def add_entries_by_word(word_ptr, entry_order, entry_rows, out):
    """out[j] += sum of entry_rows[entry_order[p]] for p in word_ptr[j] .. word_ptr[j + 1].

    The entries are given grouped by word (CSC order: entry_order lists the CSR entries of
    local word j, in document order, at word_ptr[j]:word_ptr[j + 1]), so each row of `out` is
    owned by one thread and summed in a fixed order, whatever the thread count.
    """
    K = out.shape[1]
    for j in prange(out.shape[0]):
        row = out[j]
        for p in range(word_ptr[j], word_ptr[j + 1]):
            e = entry_rows[entry_order[p]]
            for k in range(K):
                row[k] += e[k]
