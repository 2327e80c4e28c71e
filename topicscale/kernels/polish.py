"""Batch collapsed variational Bayes (CVB0) sweeps over a whole corpus (Asuncion, Welling, Smyth and
Teh 2009, "On smoothing and inference for topic models", eq. 5; Teh, Newman and Welling 2007).

Every entry p (document d, word w, count m) keeps its responsibilities resp[p, k] (float32). The
counts they imply are n_wk = sum_p m resp[p, k] over the entries of word w, n_k = sum_w n_wk and
n_dk = sum_p m resp[p, k] over the entries of document d. A sweep visits the entries block by
block and replaces each entry's responsibilities by

    resp[p, k]  proportional to  (n_wk^-p + eta) / (n_k + V eta) * (n_dk^-p + alpha_k),

n_wk^-p and n_dk^-p without the entry's own share, then over-relaxed (successive
over-relaxation of this fixed-point update; Salakhutdinov and Roweis 2003, "Adaptive overrelaxed
bound optimization methods"): with r the update above and `relax` = omega,

    resp[p, k]  proportional to  max(resp[p, k] + omega (r[p, k] - resp[p, k]), 0),

which is r itself at omega = 1 and keeps each entry on the simplex at any omega.

A block's documents are split into LANES lanes of about equal entries, swept side by side (one
thread each when there are threads): a lane updates its own counts as it goes (Gauss-Seidel
within the lane) and sees the other lanes' changes, and n_k, as they were when the block began;
the lanes' changes are added in lane order when it ends (the block's words in MERGE_CHUNKS chunks
merged side by side). So the result depends on LANES and the blocks, never on the threads. n_dk
is summed from resp when a document starts: only n_wk (V x K), the lanes' changes
(LANES x V x K) and resp are kept. n_wk and the changes may be float32 (n_k stays float64): a
sweep adds a word's changes to n_wk once a block, so roundings add up over blocks, not entries,
and an entry fetches half the bytes. An entry's update runs in float32 (n_dk, 1 / (n_k + V eta),
alpha): twice the lanes of a vector register, and a document's counts are small. The word rows
(n_wk and the lane's changes) of the entry PREFETCH_AHEAD on are prefetched: an entry's rows are
a random pair among V.
"""
import numpy as np
from numba import njit, prange

from .minibatch import distinct_words
from .prefetch import PREFETCH_AHEAD, prefetch_row

LANES = 2
MERGE_CHUNKS = 8


@njit(parallel=True, cache=True)
def document_responsibilities(indptr, indices, counts, topics, alpha, sweeps, resp):
    """resp of every entry from fixed topics (V x K, E[beta]): CVB0 of each document alone,
    n_dk starting at the document's length / K, `sweeps` sweeps over its entries. In float32
    whatever the inputs' precision (a document's counts are small)."""
    K = topics.shape[1]
    prior = alpha.astype(np.float32)
    for d in prange(indptr.shape[0] - 1):
        g = np.empty(K, dtype=np.float32)
        n_dk = np.empty(K, dtype=np.float32)
        length = 0.0
        for p in range(indptr[d], indptr[d + 1]):
            length += counts[p]
            resp[p, :] = np.float32(1.0 / K)
        n_dk[:] = np.float32(length / K)
        for _ in range(sweeps):
            for p in range(indptr[d], indptr[d + 1]):
                word, m, own = topics[indices[p]], np.float32(counts[p]), resp[p]
                for k in range(K):
                    n_dk[k] -= m * own[k]
                    g[k] = np.float32(word[k]) * (max(n_dk[k], np.float32(0.0)) + prior[k])
                scale = np.float32(1.0) / sum_in_eight(g)
                for k in range(K):
                    own[k] = g[k] * scale
                    n_dk[k] += m * own[k]


@njit(cache=True, nogil=True)
def add_word_counts(indices, counts, resp, n_wk):
    """n_wk[w, k] += m resp[p, k] over the entries p (word w, count m)."""
    for p in range(indices.shape[0]):
        w, m = indices[p], counts[p]
        for k in range(n_wk.shape[1]):
            n_wk[w, k] += m * resp[p, k]


@njit(cache=True, nogil=True)
def lane_bounds(indptr, lanes):
    """Document boundaries (lanes + 1) that split a block into lanes of about equal entries."""
    D = indptr.shape[0] - 1
    bounds = np.empty(lanes + 1, dtype=np.int64)
    bounds[0], bounds[lanes] = 0, D
    d = 0
    for lane in range(1, lanes):
        target = indptr[D] * lane / lanes
        while d < D and indptr[d] < target:
            d += 1
        bounds[lane] = d
    return bounds


@njit(cache=True, nogil=True)
def sum_in_eight(x):
    """sum(x) of a float32 vector as eight running sums (k mod 8) added pairwise at the end: no
    chain of dependent additions through all K, so the loops before and after it vectorise, and
    the same bits on any CPU. Scalars, not an array of eight: an array would be allocated on
    every call, that is, for every entry of a sweep."""
    s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = np.float32(0.0)
    n = x.shape[0]
    full = n - n % 8
    for k in range(0, full, 8):
        s0 += x[k]
        s1 += x[k + 1]
        s2 += x[k + 2]
        s3 += x[k + 3]
        s4 += x[k + 4]
        s5 += x[k + 5]
        s6 += x[k + 6]
        s7 += x[k + 7]
    if full < n:                # the last n mod 8 values, each to its k mod 8 sum
        s0 += x[full]
    if full + 1 < n:
        s1 += x[full + 1]
    if full + 2 < n:
        s2 += x[full + 2]
    if full + 3 < n:
        s3 += x[full + 3]
    if full + 4 < n:
        s4 += x[full + 4]
    if full + 5 < n:
        s5 += x[full + 5]
    if full + 6 < n:
        s6 += x[full + 6]
    return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))


@njit(cache=True, nogil=True)
def _sweep_lane(indptr, indices, counts, resp, first, last, n_wk, change, inv_total, alpha, eta, relax):
    """The sweep of documents first..last - 1, counting from n_wk + change and adding its own
    changes to `change` (V x K); all in float32 (inv_total, alpha, eta and relax given so)."""
    K = n_wk.shape[1]
    g = np.empty(K, dtype=np.float32)
    n_dk = np.empty(K, dtype=np.float32)
    zero = np.float32(0.0)
    end = indptr[last]
    for d in range(first, last):
        n_dk[:] = zero
        for p in range(indptr[d], indptr[d + 1]):
            m, own = np.float32(counts[p]), resp[p]
            for k in range(K):
                n_dk[k] += m * own[k]
        for p in range(indptr[d], indptr[d + 1]):
            m, own = np.float32(counts[p]), resp[p]
            word, moved = n_wk[indices[p]], change[indices[p]]
            if p + PREFETCH_AHEAD < end:
                prefetch_row(n_wk, indices[p + PREFETCH_AHEAD])
                prefetch_row(change, indices[p + PREFETCH_AHEAD])
            for k in range(K):
                share = m * own[k]
                n_dk[k] -= share
                g[k] = ((max(word[k] + moved[k] - share, zero) + eta) * inv_total[k]
                        * (max(n_dk[k], zero) + alpha[k]))
            scale = np.float32(1.0) / sum_in_eight(g)
            for k in range(K):
                g[k] = max(own[k] + relax * (g[k] * scale - own[k]), zero)
            scale = np.float32(1.0) / sum_in_eight(g)
            for k in range(K):
                new = g[k] * scale
                share = m * new
                moved[k] += share - m * own[k]
                n_dk[k] += share
                own[k] = new


@njit(parallel=True, cache=True)
def sweep(indptr, indices, counts, resp, n_wk, n_k, alpha, eta, change, relax):
    """One sweep over a block of documents (the module's update, over-relaxed by `relax`), in
    place on resp, n_wk and n_k; `change` (LANES x V x K, zero) is the lanes' scratch and is left
    zero."""
    K = n_k.shape[0]
    inv_total = (1.0 / (n_k + n_wk.shape[0] * eta)).astype(np.float32)
    prior = alpha.astype(np.float32)
    bounds = lane_bounds(indptr, LANES)
    for lane in prange(LANES):
        _sweep_lane(indptr, indices, counts, resp, bounds[lane], bounds[lane + 1], n_wk, change[lane],
                    inv_total, prior, np.float32(eta), np.float32(relax))
    words, _ = distinct_words(indices[indptr[0]:indptr[-1]])
    n = words.shape[0]
    added = np.zeros((MERGE_CHUNKS, K))
    for chunk in prange(MERGE_CHUNKS):
        for i in range(n * chunk // MERGE_CHUNKS, n * (chunk + 1) // MERGE_CHUNKS):
            w = words[i]
            for lane in range(LANES):
                for k in range(K):
                    c = change[lane, w, k]
                    n_wk[w, k] += c
                    added[chunk, k] += c
                    change[lane, w, k] = 0.0
    for chunk in range(MERGE_CHUNKS):
        for k in range(K):
            n_k[k] += added[chunk, k]
