"""The topic matrix (word-major lambda, V x K): its global step, column sums and E[beta] rows,
in parallel.

With a large vocabulary a pass over all V x K entries costs more than the E-step of a minibatch
(GCIDE, V = 92k: benchmarks/results/kernel.md), so LDAModel keeps lambda as scale * store + shift
and touches only the minibatch's rows (add_rows_summed), settling with one pass
(affine_step_summed) when its scale grows small. Each entry is computed as numpy computed it (the
same roundings); sums use a fixed number of blocks, so no result depends on the thread count.
"""
import numpy as np
from numba import njit, prange

# row blocks of column_sums: partial sums per block, added in block order
SUM_BLOCKS = 16


@njit(parallel=True, cache=True)
def step_towards(lam, rho, eta, words, scale, word_topic):
    """The stochastic update of the topics (SVI paper eq. 27 with lambda-hat = eta + scale *
    minibatch statistics; also SCVB0's eq. 7 and SSMF-A's step):
        lam <- (1 - rho) lam + rho eta;   lam[words[j]] += scale * word_topic[j].
    words must be distinct."""
    V, K = lam.shape
    keep = 1.0 - rho
    add = rho * eta
    for w in prange(V):
        row = lam[w]
        for k in range(K):
            row[k] = row[k] * keep + add
    for j in prange(words.shape[0]):
        row = lam[words[j]]
        stat = word_topic[j]
        for k in range(K):
            row[k] += scale * stat[k]


@njit(parallel=True, cache=True)
def affine_step_summed(lam, keep, add, words, scale, word_topic):
    """lam <- keep lam + add, then lam[words[j]] += scale * word_topic[j] (`words` ascending), in
    one pass over V x K (with keep = 1 - rho and add = rho eta, step_towards); returns the column
    sums of the new lam, summed exactly as column_sums sums them (the same blocks of rows, the
    same order), so the result equals column_sums(lam) bit for bit."""
    V, K = lam.shape
    partial = np.zeros((SUM_BLOCKS, K))
    for b in prange(SUM_BLOCKS):
        lo, hi = b * V // SUM_BLOCKS, (b + 1) * V // SUM_BLOCKS
        j = np.searchsorted(words, lo)
        acc = partial[b]
        for w in range(lo, hi):
            row = lam[w]
            for k in range(K):
                row[k] = row[k] * keep + add
            if j < words.shape[0] and words[j] == w:
                stat = word_topic[j]
                for k in range(K):
                    row[k] += scale * stat[k]
                j += 1
            for k in range(K):
                acc[k] += row[k]
    return _add_blocks(partial)


@njit(cache=True)
def _add_blocks(partial):
    """sum over blocks b of partial[b], in block order."""
    total = np.zeros(partial.shape[1])
    for b in range(partial.shape[0]):
        for k in range(partial.shape[1]):
            total[k] += partial[b, k]
    return total


@njit(parallel=True, cache=True)
def column_sums(lam):
    """sum_w lam[w, k] for each k: SUM_BLOCKS fixed blocks of rows summed in parallel, then the
    block sums in block order."""
    V, K = lam.shape
    partial = np.zeros((SUM_BLOCKS, K))
    for b in prange(SUM_BLOCKS):
        acc = partial[b]
        for w in range(b * V // SUM_BLOCKS, (b + 1) * V // SUM_BLOCKS):
            row = lam[w]
            for k in range(K):
                acc[k] += row[k]
    return _add_blocks(partial)


@njit(parallel=True, cache=True)
def add_rows_summed(lam, words, scale, word_topic):
    """lam[words[j]] += scale * word_topic[j] (`words` distinct), rows in parallel; returns the
    column sums of what was added, in SUM_BLOCKS fixed blocks of j added in block order."""
    K = lam.shape[1]
    n = words.shape[0]
    partial = np.zeros((SUM_BLOCKS, K))
    for b in prange(SUM_BLOCKS):
        acc = partial[b]
        for j in range(b * n // SUM_BLOCKS, (b + 1) * n // SUM_BLOCKS):
            row = lam[words[j]]
            stat = word_topic[j]
            for k in range(K):
                delta = scale * stat[k]
                row[k] += delta
                acc[k] += delta
    return _add_blocks(partial)


@njit(parallel=True, cache=True)
def divided_rows(lam, words, totals, out, scale=1.0, shift=0.0):
    """out[j, k] = (scale lam[words[j], k] + shift) / totals[k]: the gather and the division in
    one parallel pass (numpy's lam[words] / totals made two, each into a new V' x K array); IEEE
    arithmetic, so with scale 1 and shift 0 the values are numpy's lam[words] / totals."""
    K = lam.shape[1]
    for j in prange(words.shape[0]):
        row = lam[words[j]]
        dst = out[j]
        for k in range(K):
            dst[k] = (scale * row[k] + shift) / totals[k]


def mean_topic_rows(lam, words=None, totals=None, scale=1.0, shift=0.0):
    """E[beta] rows: lambda[w, k] / sum_v lambda[v, k] for the given words (all when None), V' x K,
    where lambda = scale * lam + shift (LDAModel's lazy form); totals, when given, are lambda's
    column sums. As a local step's topics this is the zeroth-order plug-in of CVB0 (SCVB0 paper,
    eq. 5: (N^Phi_wk + eta) / (N^Z_k + V eta) when lambda = N^Phi + eta)."""
    if totals is None:
        totals = scale * column_sums(lam) + lam.shape[0] * shift
    words = np.arange(lam.shape[0]) if words is None else np.asarray(words, dtype=np.int64)
    if words.shape[0] and (words.min() < 0 or words.max() >= lam.shape[0]):
        raise IndexError(f"word ids must be in 0..{lam.shape[0] - 1}")
    out = np.empty((words.shape[0], lam.shape[1]))
    divided_rows(np.ascontiguousarray(lam), words, np.ascontiguousarray(totals, dtype=np.float64), out,
                 float(scale), float(shift))
    return out
