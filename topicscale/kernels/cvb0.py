"""CVB0 document step for a fixed topic matrix, clumped per distinct word (the local step of
SCVB0: Foulds, Boyles, DuBois, Smyth and Welling 2013, eqs. 5, 6 and 9 and Algorithm 2).

Symbols (paper -> code): for document j with distinct words w_p and counts m_p (= m_aj),
C_j = sum_p m_p its length, N^Theta_j -> n_theta, gamma_ij -> g, and
topics[w, k] = (N^Phi_wk + eta) / (N^Z_k + V eta), the first factor of eq. 5 (E[beta], word-major).

    g_k        proportional to topics[w_p, k] * (n_theta_k + alpha_k)                  (eq. 5)
    rho        = s / (tau + t)^kappa, t = tokens of the document processed so far    (sec. 4.1)
    n_theta   <- (1 - rho)^m_p n_theta + C_j g (1 - (1 - rho)^m_p)          (eq. 9 = eq. 6, m_p times)

n_theta starts at C_j / K for every topic (a deterministic stand-in for Algorithm 2's random
initialisation), t starts at 0 and runs on across passes; rho is capped at 1. Words are visited
in the (ascending id) order of the CSR row, `burn_in` passes then one final pass; in the final
pass each distinct word's m_p * g is the document's contribution to the statistic hat N^Phi
(Algorithm 2, innermost loop, without the C/|M| factor, which the global step applies).
gamma = alpha + n_theta after the final pass.

Speed (the default local step on short documents, so the training hot path there): the step
sizes rho_t come from a table over integer t (every count is an integer), which the caller builds
once (step_table), so no word pays a pow; keep = 1 - rho for m_p = 1 and (1 - rho)^m_p by
repeated squaring for other whole counts below 64. One pass over the topics (lanes.blend_weigh, explicit
8-lane vectors) updates N^Theta for a word and weighs the next word's row, summing its normaliser
in vector lanes (GCIDE, 2 passes: K=50 1.28x, K=200 1.23x against three loops with a scalar
sum). On a large vocabulary the step waits on memory for each word's topic row; the first pass
prefetches the rows PREFETCH_AHEAD words ahead, and the next document's first rows while a
document runs (GCIDE, K=50: 0.80 -> 0.50 ms a minibatch).
"""
import numpy as np
from numba import njit, prange, get_thread_id

from .lanes import blend_weigh
from .prefetch import PREFETCH_AHEAD, prefetch_row

# step sizes rho_t are tabulated for t below this (a document's tokens times its passes); beyond
# it, or for a count that is not an integer, rho_t is computed where it is needed
STEP_TABLE_MAX = 1 << 16


@njit(cache=True, nogil=True)
def step_size(s, tau, kappa, t):
    """rho_t = min(1, s / (tau + t)^kappa) (sec. 4.1)."""
    return min(1.0, s / (tau + t) ** kappa)


@njit(cache=True, nogil=True)
def step_table(s, tau, kappa):
    """steps[t] = step_size(s, tau, kappa, t) for t = 0 .. STEP_TABLE_MAX - 1."""
    steps = np.empty(STEP_TABLE_MAX)
    for t in range(STEP_TABLE_MAX):
        steps[t] = step_size(s, tau, kappa, float(t))
    return steps


@njit(error_model="numpy", cache=True, nogil=True, inline="always")
def keep_power(x, m):
    """x ** m by repeated squaring when m is a whole number below 64 (word counts are), else pow:
    a count above 1 on a short document otherwise calls pow for every pass (GCIDE: 12% of words)."""
    if not 0.0 < m < 64.0:
        return x ** m
    n = int(m)
    if n != m:
        return x ** m
    result = x if n & 1 else 1.0
    n >>= 1
    while n > 0:
        x *= x
        if n & 1:
            result *= x
        n >>= 1
    return result


@njit(error_model="numpy", cache=True, nogil=True, inline="never")
def uniform_fallback(g):
    """g = 1 for every topic, for a word with no mass under any topic; returns the normaliser K.
    Out of line: inlined, this cold loop slowed every word (K=8: 17%, K=50: 5%)."""
    for k in range(g.shape[0]):
        g[k] = 1.0
    return float(g.shape[0])


@njit(error_model="numpy", cache=True, nogil=True, inline="always")
def cvb0_document(ids, counts, topics, alpha, burn_in, s, tau, kappa, steps, n_theta, g,
                  entry_gamma, want_entries):
    """One document in place: n_theta (K) on return holds N^Theta_j; entry_gamma[p] = m_p g_p
    of the final pass when want_entries. steps[t] = step_size(s, tau, kappa, t) for t below its
    length. Returns the number of passes run."""
    K = n_theta.shape[0]
    n = ids.shape[0]
    length = 0.0
    for p in range(n):
        length += counts[p]
    for k in range(K):
        n_theta[k] = length / K
    if n == 0:
        return burn_in + 1
    # g holds word p's unnormalised gamma (eq. 5) and norm its sum; blend_weigh updates N^Theta
    # for word p and weighs word p + 1 (the next pass's first word after the last) in one pass
    norm = blend_weigh(n_theta, None, None, g, None, None, topics[ids[0]], alpha)
    t = 0.0
    for sweep in range(burn_in + 1):
        final = sweep == burn_in
        for p in range(n):
            if sweep == 0 and p + PREFETCH_AHEAD < n:
                prefetch_row(topics, ids[p + PREFETCH_AHEAD])
            m = counts[p]
            if not norm > 0.0:                      # the word has no mass under any topic: g = 1/K
                norm = uniform_fallback(g)
            step = int(t)
            rho = steps[step] if step == t and step < steps.shape[0] else step_size(s, tau, kappa, t)
            keep = 1.0 - rho if m == 1.0 else keep_power(1.0 - rho, m)
            scale = length * (1.0 - keep) / norm
            t += m
            last = final and p == n - 1
            following = topics[ids[p + 1 if p + 1 < n else 0]]
            if final and want_entries:
                if last:
                    blend_weigh(n_theta, keep, scale, g, entry_gamma[p], m / norm, None, alpha)
                else:
                    norm = blend_weigh(n_theta, keep, scale, g, entry_gamma[p], m / norm, following, alpha)
            elif last:
                blend_weigh(n_theta, keep, scale, g, None, None, None, alpha)
            else:
                norm = blend_weigh(n_theta, keep, scale, g, None, None, following, alpha)
    return burn_in + 1


@njit(cache=True, nogil=True, inline="always")
def prefetch_first_rows(indices, lo, hi, topics):
    """Prefetch the topic rows of a document's first PREFETCH_AHEAD words (entries lo:hi)."""
    for p in range(lo, min(hi, lo + PREFETCH_AHEAD)):
        prefetch_row(topics, indices[p])


@njit(parallel=True, cache=True)
def cvb0_batch(indptr, indices, counts, topics, alpha, burn_in, s, tau, kappa, steps, n_chunks,
               gamma, entry_gamma, passes, chunk_thread):
    """CVB0 for every document of a CSR block, parallel over fixed chunks of documents.
    steps = step_table(s, tau, kappa) (or a prefix of it).

    gamma (D x K) receives alpha + N^Theta; entry_gamma is nnz x K (m_p g_p of the final pass,
    aligned with `indices`) or 0 x K when the statistics are not wanted. Documents are
    independent, so results do not depend on the thread count; scratch is per chunk.
    """
    D = indptr.shape[0] - 1
    K = topics.shape[1]
    want = entry_gamma.shape[0] > 0
    for c in prange(n_chunks):
        chunk_thread[c] = get_thread_id()
        g = np.empty(K)
        first, last = c * D // n_chunks, (c + 1) * D // n_chunks
        if first < last:
            prefetch_first_rows(indices, indptr[first], indptr[first + 1], topics)
        for d in range(first, last):
            lo = indptr[d]
            hi = indptr[d + 1]
            if d + 1 < last:
                prefetch_first_rows(indices, hi, indptr[d + 2], topics)
            row = gamma[d]
            passes[d] = cvb0_document(indices[lo:hi], counts[lo:hi], topics, alpha, burn_in, s, tau,
                                      kappa, steps, row, g, entry_gamma[lo:hi], want)
            for k in range(K):
                row[k] += alpha[k]
