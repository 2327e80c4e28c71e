"""Collapsed Gibbs sampling of a document's topic assignments z given fixed topics, theta
integrated out: the local step of Mimno, Hoffman and Blei (2012) and of SSMF-A (Hoffman and
Blei 2015, Algorithm 2 step 6; sec. 2.5 "sampling from the exact conditional").

For token i of document d (word w_i), with n_dk^{-i} the document's other tokens in topic k:

    p(z_i = k | z_{-i}, beta) proportional to (n_dk^{-i} + alpha_k) * topics[w_i, k]

topics is any per-word scaling of beta (a sampled beta, E[beta] or exp(E[log beta])): each row
may be scaled by a positive constant without changing the conditional.

Sweeps: sweep 0 initialises z by drawing each token independently from its conditional with
no other token placed, p(z_i = k) proportional to alpha_k topics[w_i, k] (a sequential start,
conditioning on the tokens already placed, snowballed documents into one topic and recovered
planted topics worse); sweeps 1 .. sweeps-1 resample every token in turn. The first `burn_in`
sweeps are discarded; the document-topic counts n_d and the per-entry topic
histograms of the remaining sweeps are averaged (Mimno et al. 2012, sec. 3).
Tokens are the CSR entries expanded by their (integer) counts, in entry order, into per-chunk
scratch.

Random numbers: one SplitMix64 stream per document, started from seeds[d] (uint64) and
advanced once per token per sweep (u = top 53 bits / 2^53), so the draws depend only on the
document's seed, never on threads or chunks; tests/reference.py reimplements the same stream.
"""
import numpy as np
from numba import njit, prange, get_thread_id

GOLDEN = np.uint64(0x9E3779B97F4A7C15)
MIX1 = np.uint64(0xBF58476D1CE4E5B9)
MIX2 = np.uint64(0x94D049BB133111EB)
TWO_M53 = 1.0 / 9007199254740992.0


@njit(cache=True, nogil=True)
def splitmix64(state):
    """Advance a SplitMix64 state; returns (new state, 64 random bits)."""
    state = state + GOLDEN
    z = state
    z = (z ^ (z >> np.uint64(30))) * MIX1
    z = (z ^ (z >> np.uint64(27))) * MIX2
    return state, z ^ (z >> np.uint64(31))


@njit(cache=True, nogil=True)
def uniforms(seed, n):
    """The first n uniforms in [0, 1) of the stream started at `seed` (for tests)."""
    out = np.empty(n)
    state = np.uint64(seed)
    for i in range(n):
        state, bits = splitmix64(state)
        out[i] = float(bits >> np.uint64(11)) * TWO_M53
    return out


@njit(cache=True, nogil=True)
def gibbs_document(ids, counts, topics, alpha, sweeps, burn_in, seed, gamma, entry_topic,
                   want_entries, z_out, want_z, z, entry, n_dk, prob):
    """Sample one document. gamma (K) receives alpha + mean post-burn-in n_d; entry_topic[p, k]
    (when wanted) the mean number of entry p's tokens in topic k; z_out the final z (when
    wanted). z, entry (>= tokens), n_dk and prob (K) are scratch."""
    K = gamma.shape[0]
    n_tokens = 0
    for p in range(ids.shape[0]):
        for _ in range(int(counts[p] + 0.5)):
            entry[n_tokens] = p
            n_tokens += 1
    for k in range(K):
        n_dk[k] = 0.0
        gamma[k] = 0.0
    if want_entries:
        for p in range(ids.shape[0]):
            for k in range(K):
                entry_topic[p, k] = 0.0
    state = np.uint64(seed)
    for sweep in range(sweeps):
        for i in range(n_tokens):
            if sweep > 0:
                n_dk[z[i]] -= 1.0
            row = topics[ids[entry[i]]]
            placed = 1.0 if sweep > 0 else 0.0
            total = 0.0
            for k in range(K):
                prob[k] = (placed * n_dk[k] + alpha[k]) * row[k]
                total += prob[k]
            if not (total > 0.0 and total < np.inf):     # row without usable mass: prior only
                total = 0.0
                for k in range(K):
                    prob[k] = placed * n_dk[k] + alpha[k]
                    total += prob[k]
            state, bits = splitmix64(state)
            target = float(bits >> np.uint64(11)) * TWO_M53 * total
            k = 0
            cum = prob[0]
            while cum <= target and k < K - 1:
                k += 1
                cum += prob[k]
            z[i] = k
            n_dk[k] += 1.0
        if sweep >= burn_in:
            for k in range(K):
                gamma[k] += n_dk[k]
            if want_entries:
                for i in range(n_tokens):
                    entry_topic[entry[i], z[i]] += 1.0
    kept = sweeps - burn_in
    for k in range(K):
        gamma[k] = alpha[k] + gamma[k] / kept
    if want_entries:
        for p in range(ids.shape[0]):
            for k in range(K):
                entry_topic[p, k] /= kept
    if want_z:
        for i in range(n_tokens):
            z_out[i] = z[i]


@njit(parallel=True, cache=True)
def gibbs_batch(indptr, indices, counts, token_ptr, topics, alpha, sweeps, burn_in, seeds, n_chunks,
                gamma, entry_topic, z_out, chunk_thread):
    """Gibbs for every document of a CSR block, parallel over fixed chunks of documents.

    token_ptr (D + 1) gives each document's token offsets (cumulative integer counts); scratch
    for z is sized to the longest document of the chunk and allocated once per chunk.
    entry_topic is nnz x K or 0 x K (not wanted); z_out has token_ptr[-1] entries or none.
    """
    D = indptr.shape[0] - 1
    K = topics.shape[1]
    want_entries = entry_topic.shape[0] > 0
    want_z = z_out.shape[0] > 0
    for c in prange(n_chunks):
        chunk_thread[c] = get_thread_id()
        first = c * D // n_chunks
        last = (c + 1) * D // n_chunks
        longest = 0
        for d in range(first, last):
            longest = max(longest, token_ptr[d + 1] - token_ptr[d])
        z = np.empty(longest, dtype=np.int32)
        entry = np.empty(longest, dtype=np.int64)
        n_dk = np.empty(K)
        prob = np.empty(K)
        for d in range(first, last):
            lo = indptr[d]
            hi = indptr[d + 1]
            gibbs_document(indices[lo:hi], counts[lo:hi], topics, alpha, sweeps, burn_in, seeds[d],
                           gamma[d], entry_topic[lo:hi], want_entries,
                           z_out[token_ptr[d]:token_ptr[d + 1]], want_z, z, entry, n_dk, prob)
