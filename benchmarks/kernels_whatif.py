"""Micro-kernels for bench_kernel.py: the machine's roofline for the E-step's data layout, and
"what-if" variants of topicscale's mean-field sweep that show where the kernel's time goes.

All of them take the same arrays as topicscale.kernels.meanfield.estep_batch (CSR minibatch with
local word ids, the word-major V' x K topic matrix, alpha) and run, per document, exactly the
number of sweeps the real E-step needed (`sweeps`, from a real MeanField.fit), so that their work
is the same count of token-topic updates: sum_d (distinct words of d) x sweeps_d x K.

roofline_axpy   for each sweep, for each word: acc += c_w * B[w, :]   (1 gathered row, K multiply-adds)
                -- the "gather a row by word id and multiply-add into a K-vector" loop; fastmath;
                in the precision of B (float64, or float32 for the single-precision E-step). With
                ahead > 0 it prefetches, in the first sweep, the row `ahead` words on, as CVB0's
                kernel does (PREFETCH_AHEAD); whether that helps the loop depends on the run, so
                bench_kernel times both and takes the faster as the roofline.
roofline_fused  for each sweep, for each word: n = B[w, :] . x ; acc += (c_w / n) * B[w, :]
                (2 multiply-adds per update and a division per word: the E-step's arithmetic with
                nothing else), fastmath so the dot product vectorises.
sweep_nodigamma topicscale's sweep with exp(E[log theta]) replaced by gamma / sum(gamma): the cost of
                the rest of the sweep (same dot with 4 partial sums, no fastmath).
sweep_fastdigamma topicscale's sweep with a branch-free exp(psi(x)) (x + 6 shift as one rational term).
sweep_lanes8    sweep_fastdigamma with an 8-lane fixed-order dot product (vectorisable, no fastmath,
                the same result on every machine).
sweep_fastmath  sweep_fastdigamma with the dot product vectorised (fastmath without nnan/ninf).
sweep_f32       sweep_fastmath in float32 (topics and accumulators), as gensim and VW compute.

These are measurement tools, not replacements: they do not test convergence (the sweep counts
are given), and their results are not used.
"""
import numpy as np
from numba import njit, prange

from topicscale.kernels.prefetch import prefetch_row

FAST = {"nsz", "arcp", "contract", "afn", "reassoc"}      # fastmath without nnan / ninf


@njit(parallel=True, fastmath=True, cache=True)
def roofline_axpy(indptr, indices, counts, topics, sweeps, n_chunks, out, ahead=0):
    D = indptr.shape[0] - 1
    K = topics.shape[1]
    for c in prange(n_chunks):
        acc = np.zeros(K, dtype=topics.dtype)
        w = np.empty(1, dtype=topics.dtype)         # the weight in the precision of the rows
        for d in range(c * D // n_chunks, (c + 1) * D // n_chunks):
            lo, hi = indptr[d], indptr[d + 1]
            for s in range(sweeps[d]):
                for j in range(lo, hi):
                    if s == 0 and ahead > 0 and j + ahead < hi:
                        prefetch_row(topics, indices[j + ahead])
                    row = topics[indices[j]]
                    w[0] = counts[j] * 1e-3
                    wj = w[0]
                    for k in range(K):
                        acc[k] += wj * row[k]
        total = 0.0
        for k in range(K):
            total += acc[k]
        out[c] = total


@njit(parallel=True, fastmath=True, cache=True)
def roofline_fused(indptr, indices, counts, topics, sweeps, n_chunks, out):
    D = indptr.shape[0] - 1
    K = topics.shape[1]
    for c in prange(n_chunks):
        acc = np.zeros(K)
        x = np.full(K, 1.0 / K)
        for d in range(c * D // n_chunks, (c + 1) * D // n_chunks):
            for s in range(sweeps[d]):
                for j in range(indptr[d], indptr[d + 1]):
                    row = topics[indices[j]]
                    n = 0.0
                    for k in range(K):
                        n += x[k] * row[k]
                    r = counts[j] / (n + 1e-100)
                    for k in range(K):
                        acc[k] += r * row[k]
        total = 0.0
        for k in range(K):
            total += acc[k]
        out[c] = total


@njit(cache=True, inline="always")
def _dot4(a, b):
    K = a.shape[0]
    K4 = K - K % 4
    s0 = s1 = s2 = s3 = 0.0
    for k in range(0, K4, 4):
        s0 += a[k] * b[k]
        s1 += a[k + 1] * b[k + 1]
        s2 += a[k + 2] * b[k + 2]
        s3 += a[k + 3] * b[k + 3]
    for k in range(K4, K):
        s0 += a[k] * b[k]
    return (s0 + s1) + (s2 + s3)


@njit(parallel=True, cache=True)
def sweep_nodigamma(indptr, indices, counts, topics, alpha, sweeps, n_chunks, out):
    D = indptr.shape[0] - 1
    K = topics.shape[1]
    for c in prange(n_chunks):
        gamma = np.empty(K)
        e = np.empty(K)
        acc = np.empty(K)
        total = 0.0
        for d in range(c * D // n_chunks, (c + 1) * D // n_chunks):
            for k in range(K):
                gamma[k] = 1.0
            for s in range(sweeps[d]):
                g = 0.0
                for k in range(K):
                    g += gamma[k]
                for k in range(K):
                    e[k] = gamma[k] / g
                    acc[k] = 0.0
                for j in range(indptr[d], indptr[d + 1]):
                    row = topics[indices[j]]
                    r = counts[j] / (_dot4(e, row) + 1e-100)
                    for k in range(K):
                        acc[k] += r * row[k]
                for k in range(K):
                    gamma[k] = alpha[k] + e[k] * acc[k]
            total += gamma[0]
        out[c] = total


@njit(cache=True, inline="always")
def exp_digamma_branchless(x):
    """exp(psi(x)) for x > 0 without a data-dependent loop: psi(x) = psi(x + 6) - sum_{i<6} 1/(x+i),
    the sum as one fraction (numerator and denominator polynomials), then the asymptotic series."""
    p0 = x
    p1 = x + 1.0
    p2 = x + 2.0
    p3 = x + 3.0
    p4 = x + 4.0
    p5 = x + 5.0
    a = p0 * p1
    b = p2 * p3
    c = p4 * p5
    den = a * b * c
    num = (p0 + p1) * b * c + (p2 + p3) * a * c + (p4 + p5) * a * b
    y = x + 6.0
    inv = 1.0 / y
    inv2 = inv * inv
    series = inv2 * (1.0 / 12 - inv2 * (1.0 / 120 - inv2 * (1.0 / 252 - inv2 * (
        1.0 / 240 - inv2 * (1.0 / 132)))))
    return y * np.exp(-num / den - 0.5 * inv - series)


@njit(parallel=True, cache=True)
def sweep_fastdigamma(indptr, indices, counts, topics, alpha, sweeps, n_chunks, out):
    D = indptr.shape[0] - 1
    K = topics.shape[1]
    for c in prange(n_chunks):
        gamma = np.empty(K)
        e = np.empty(K)
        acc = np.empty(K)
        total = 0.0
        for d in range(c * D // n_chunks, (c + 1) * D // n_chunks):
            for k in range(K):
                gamma[k] = 1.0
            for s in range(sweeps[d]):
                g = 0.0
                for k in range(K):
                    g += gamma[k]
                inv = 1.0 / exp_digamma_branchless(g)
                for k in range(K):
                    e[k] = exp_digamma_branchless(gamma[k]) * inv
                    acc[k] = 0.0
                for j in range(indptr[d], indptr[d + 1]):
                    row = topics[indices[j]]
                    r = counts[j] / (_dot4(e, row) + 1e-100)
                    for k in range(K):
                        acc[k] += r * row[k]
                for k in range(K):
                    gamma[k] = alpha[k] + e[k] * acc[k]
            total += gamma[0]
        out[c] = total


@njit(parallel=True, fastmath=FAST, cache=True)
def sweep_fastmath(indptr, indices, counts, topics, alpha, sweeps, n_chunks, out):
    D = indptr.shape[0] - 1
    K = topics.shape[1]
    for c in prange(n_chunks):
        gamma = np.empty(K)
        e = np.empty(K)
        acc = np.empty(K)
        total = 0.0
        for d in range(c * D // n_chunks, (c + 1) * D // n_chunks):
            for k in range(K):
                gamma[k] = 1.0
            for s in range(sweeps[d]):
                g = 0.0
                for k in range(K):
                    g += gamma[k]
                inv = 1.0 / exp_digamma_branchless(g)
                for k in range(K):
                    e[k] = exp_digamma_branchless(gamma[k]) * inv
                    acc[k] = 0.0
                for j in range(indptr[d], indptr[d + 1]):
                    row = topics[indices[j]]
                    n = 0.0
                    for k in range(K):
                        n += e[k] * row[k]
                    r = counts[j] / (n + 1e-100)
                    for k in range(K):
                        acc[k] += r * row[k]
                for k in range(K):
                    gamma[k] = alpha[k] + e[k] * acc[k]
            total += gamma[0]
        out[c] = total


@njit(parallel=True, fastmath=FAST, cache=True)
def sweep_f32(indptr, indices, counts, topics32, alpha, sweeps, n_chunks, out):
    D = indptr.shape[0] - 1
    K = topics32.shape[1]
    for c in prange(n_chunks):
        gamma = np.empty(K)
        e = np.empty(K, dtype=np.float32)
        acc = np.empty(K, dtype=np.float32)
        total = 0.0
        for d in range(c * D // n_chunks, (c + 1) * D // n_chunks):
            for k in range(K):
                gamma[k] = 1.0
            for s in range(sweeps[d]):
                g = 0.0
                for k in range(K):
                    g += gamma[k]
                inv = 1.0 / exp_digamma_branchless(g)
                for k in range(K):
                    e[k] = np.float32(exp_digamma_branchless(gamma[k]) * inv)
                    acc[k] = np.float32(0.0)
                for j in range(indptr[d], indptr[d + 1]):
                    row = topics32[indices[j]]
                    n = np.float32(0.0)
                    for k in range(K):
                        n += e[k] * row[k]
                    r = np.float32(counts[j] / (n + np.float32(1e-30)))
                    for k in range(K):
                        acc[k] += r * row[k]
                for k in range(K):
                    gamma[k] = alpha[k] + e[k] * acc[k]
            total += gamma[0]
        out[c] = total


@njit(cache=True, inline="always")
def _dot_lanes8(a, b, part):
    """sum_k a_k b_k with 8 lane accumulators in a fixed order: the inner loop over lanes is a
    plain vector operation (vectorisable without reassociation), so the result is the same on
    any machine and thread count."""
    K = a.shape[0]
    K8 = K - K % 8
    for l in range(8):
        part[l] = 0.0
    for k in range(0, K8, 8):
        for l in range(8):
            part[l] += a[k + l] * b[k + l]
    s = ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]))
    for k in range(K8, K):
        s += a[k] * b[k]
    return s


@njit(parallel=True, cache=True)
def sweep_lanes8(indptr, indices, counts, topics, alpha, sweeps, n_chunks, out):
    """sweep_fastdigamma with the 8-lane fixed-order dot product (no fastmath at all)."""
    D = indptr.shape[0] - 1
    K = topics.shape[1]
    for c in prange(n_chunks):
        gamma = np.empty(K)
        e = np.empty(K)
        acc = np.empty(K)
        part = np.empty(8)
        total = 0.0
        for d in range(c * D // n_chunks, (c + 1) * D // n_chunks):
            for k in range(K):
                gamma[k] = 1.0
            for s in range(sweeps[d]):
                g = 0.0
                for k in range(K):
                    g += gamma[k]
                inv = 1.0 / exp_digamma_branchless(g)
                for k in range(K):
                    e[k] = exp_digamma_branchless(gamma[k]) * inv
                    acc[k] = 0.0
                for j in range(indptr[d], indptr[d + 1]):
                    row = topics[indices[j]]
                    r = counts[j] / (_dot_lanes8(e, row, part) + 1e-100)
                    for k in range(K):
                        acc[k] += r * row[k]
                for k in range(K):
                    gamma[k] = alpha[k] + e[k] * acc[k]
            total += gamma[0]
        out[c] = total


VARIANTS = {
    "sweep_lanes8": sweep_lanes8,
    "sweep_nodigamma": sweep_nodigamma,
    "sweep_fastdigamma": sweep_fastdigamma,
    "sweep_fastmath": sweep_fastmath,
    "sweep_f32": sweep_f32,
}
