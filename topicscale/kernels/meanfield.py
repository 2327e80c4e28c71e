"""LDA mean-field document E-step (SVI paper, Hoffman et al. 2013, figure 6 steps 5-9).

For document d with distinct words w_n and counts c_n, iterate from gamma_dk = 1:
    phi_nk   proportional to exp(E[log theta_dk]) * B[w_n, k]                 (eq. 33)
    gamma_dk = alpha_k + sum_n c_n phi_nk                                      (eq. 34)
until the mean absolute change of gamma_d falls below `tol` or `max_iter` sweeps ran;
optionally accelerated by SQUAREM (see estep_document).
B is E[beta] or exp(E[log beta]) in training (MeanField.estep_beta; V x K, word-major, so a
word's row is contiguous), or a point estimate of the topics when folding in exported topics.

phi is never stored: with norm_n = sum_k exp(E[log theta_dk]) B[w_n, k], the sufficient
statistic sum_d c_dn phi_dnk = exp(E[log theta_dk]) B[w,k] c_n / norm_n, so the kernel
returns the last sweep's per-token weight r_n = c_n / norm_n and exp(E[log theta_d]), and
the caller multiplies by B once per word of the minibatch (Hoffman's trick).

Kernels use numba's error_model="numpy": a float division never raises (none can divide by
zero here: norms carry NORM_FLOOR), so loops with divisions have no per-element check and
vectorise.
"""
import numpy as np
from numba import njit, prange, get_thread_id

from .lanes import add_scaled_rows
from .special import exp_dirichlet_lanes

NORM_FLOOR = 1e-100


@njit(error_model="numpy", cache=True, nogil=True, inline="always")
def dot_prefix(a, b, n):
    """sum_{p < n} a_p b_p with four independent partial sums: the additions no longer wait on
    each other (the loop was latency-bound), and the order is fixed, so results stay
    deterministic."""
    n4 = n - n % 4
    s0 = s1 = s2 = s3 = 0.0
    for p in range(0, n4, 4):
        s0 += a[p] * b[p]
        s1 += a[p + 1] * b[p + 1]
        s2 += a[p + 2] * b[p + 2]
        s3 += a[p + 3] * b[p + 3]
    for p in range(n4, n):
        s0 += a[p] * b[p]
    return (s0 + s1) + (s2 + s3)


@njit(error_model="numpy", cache=True, nogil=True, inline="always")
def mean_absolute_difference(a, b):
    """sum_k |a_k - b_k| / K with four independent partial sums (see dot_prefix)."""
    K = a.shape[0]
    K4 = K - K % 4
    s0 = s1 = s2 = s3 = 0.0
    for k in range(0, K4, 4):
        s0 += abs(a[k] - b[k])
        s1 += abs(a[k + 1] - b[k + 1])
        s2 += abs(a[k + 2] - b[k + 2])
        s3 += abs(a[k + 3] - b[k + 3])
    for k in range(K4, K):
        s0 += abs(a[k] - b[k])
    return ((s0 + s1) + (s2 + s3)) / K


@njit(error_model="numpy", cache=True, nogil=True, inline="always")
def dot(a, b):
    """sum_k a_k b_k (see dot_prefix)."""
    return dot_prefix(a, b, a.shape[0])


# A document whose K x n block of topic rows has at most this many entries (32 MiB, one block per
# thread at a time) gets a topic-major copy, so the normalisers are computed for all its words at
# once (see token_weights); longer documents use the rows in place. The copy pays for itself well
# beyond the L2 cache: at K=200, NYT minibatches (up to 599 distinct words a document) ran 1.35x
# faster than with a 256 KiB cap, and documents of 1340 to 2980 distinct words 1.7x.
BLOCK_ENTRIES = 1 << 22


@njit(error_model="numpy", cache=True, nogil=True)
def token_weights(ids, counts, topics, block, exp_elog_theta, weight):
    """weight_n = c_n / norm_n, norm_n = sum_k exp(E[log theta_k]) B[w_n, k] (eq. 33's normaliser);
    returns the smallest norm_n (inf for an empty document).

    With a topic-major block (block[k, n] = B[w_n, k], a C-contiguous K x m array, m >= n), the
    sum over k runs in the outer loop, four topics at a time, and the inner loop over the words
    is elementwise (lanes.add_scaled_rows, 512-bit blocks), and each norm_n is summed in topic
    order k = 0, 1, 2, ... Without a block (m < n: long documents), each norm is a dot product
    over a row of B (four partial sums), which rounds differently; which path a document takes
    depends only on its length and K, so results stay reproducible. The arithmetic runs in the
    precision of `topics` (exp_elog_theta, block and weight share it).
    """
    n = ids.shape[0]
    if block.shape[1] < n:
        for j in range(n):
            weight[j] = dot(exp_elog_theta, topics[ids[j]])
    else:
        K = exp_elog_theta.shape[0]
        for j in range(n):
            weight[j] = 0.0
        K4 = K - K % 4
        normaliser = weight[:n]
        for k in range(0, K4, 4):
            add_scaled_rows(normaliser, exp_elog_theta[k], block[k], exp_elog_theta[k + 1], block[k + 1],
                            exp_elog_theta[k + 2], block[k + 2], exp_elog_theta[k + 3], block[k + 3])
        for k in range(K4, K):
            ek = exp_elog_theta[k]
            b = block[k]
            for j in range(n):
                weight[j] += ek * b[j]
    lowest = np.inf
    for j in range(n):
        lowest = min(lowest, weight[j])
        weight[j] = counts[j] / (weight[j] + NORM_FLOOR)
    return lowest


@njit(error_model="numpy", cache=True, nogil=True)
def weighted_row_sum(ids, topics, weight, acc):
    """acc_k = sum_n weight_n B[w_n, k], summed in word order, four rows per pass over acc
    (lanes.add_scaled_rows: NYT K=50 in single precision, the E-step 1.12x)."""
    K = acc.shape[0]
    n = ids.shape[0]
    for k in range(K):
        acc[k] = 0.0
    n4 = n - n % 4
    for j in range(0, n4, 4):
        add_scaled_rows(acc, weight[j], topics[ids[j]], weight[j + 1], topics[ids[j + 1]],
                        weight[j + 2], topics[ids[j + 2]], weight[j + 3], topics[ids[j + 3]])
    for j in range(n4, n):
        w = topics[ids[j]]
        r = weight[j]
        for k in range(K):
            acc[k] += r * w[k]


# estep_document's answer when single precision could not be trusted (see SAFE_NORM_SINGLE)
REFUSED = -1
# In single precision, a document whose smallest normaliser falls below this is redone in double:
# below it the products exp(E[log theta_k]) B[w, k] that make up the normaliser may be subnormal
# (under 1.2e-38 in float32) and lose their digits; exp(E[log beta]) of a word a topic has
# never seen is about exp(digamma(eta)) = 2e-44 at eta = 0.01.
SAFE_NORM_SINGLE = 1e-30


@njit(error_model="numpy", cache=True, nogil=True)
def sweep(ids, counts, topics, block, alpha, gamma_in, gamma_out, lanes, weight, safe_norm, theta_given):
    """gamma_out = F(gamma_in), one coordinate-ascent sweep (eqs. 33-34); returns the mean
    absolute change, or -1 when a normaliser fell below safe_norm or the change is not finite
    (only when safe_norm > 0). lanes (2 x K, the precision of topics) receives exp(E[log theta])
    of gamma_in, computed in that precision (special.exp_dirichlet_lanes) unless theta_given
    says lanes[0] holds it already, and the accumulator; weight receives the token weights
    c_n / norm_n."""
    K = gamma_in.shape[0]
    theta, acc = lanes[0], lanes[1]
    if not theta_given:
        exp_dirichlet_lanes(gamma_in, theta)
    lowest = token_weights(ids, counts, topics, block, theta, weight)
    weighted_row_sum(ids, topics, weight, acc)
    for k in range(K):
        gamma_out[k] = alpha[k] + theta[k] * acc[k]
    change = mean_absolute_difference(gamma_out, gamma_in)
    if safe_norm > 0.0 and (lowest < safe_norm or not change < np.inf):
        return -1.0
    return change


@njit(error_model="numpy", cache=True, nogil=True)
def estep_document(ids, counts, topics, alpha, max_iter, tol, accelerate, safe_norm, start_theta,
                   gamma, exp_elog_theta, token_weight, gammas, lanes, weight, block):
    """Fit one document's gamma (in place, from gamma = 1); returns the number of sweeps, or
    REFUSED when safe_norm > 0 and a sweep returned -1 (see sweep).

    Plain: gamma <- F(gamma) until the mean change is below tol. Accelerated (SQUAREM,
    Varadhan and Roland 2008, step length S3): from g0, g1 = F(g0), g2 = F(g1),
    r = g1 - g0, v = g2 - g1 - r, a = min(-|r|/|v|, -1), g0 <- max(g0 - 2 a r + a^2 v, alpha)
    (projected onto the feasible set gamma >= alpha). The convergence test is the same
    (mean change over one sweep below tol), and every F counts against max_iter.
    start_theta is exp(E[log theta]) of the start gamma = 1 (the same for every document, so
    the first sweep skips it). gammas is a (3, K) float64 array (g0, g1, g2); lanes (2 x K),
    start_theta, weight (at least n) and block (K x m) have the precision of topics. When the
    document has n <= m distinct words, its rows are copied into block[:, :n] topic-major (see
    token_weights). exp_elog_theta and token_weight (float64) receive the last sweep's
    exp(E[log theta]) and token weights: those of the phi that gave the returned gamma
    (max_iter >= 1).
    """
    K = gamma.shape[0]
    n = ids.shape[0]
    g0, g1, g2 = gammas[0], gammas[1], gammas[2]
    if n <= block.shape[1]:
        for j in range(n):
            row = topics[ids[j]]
            for k in range(K):
                block[k, j] = row[k]
    for k in range(K):
        g0[k] = 1.0
        lanes[0, k] = start_theta[k]
    theta_given = True
    sweeps = 0
    result = g1
    while sweeps < max_iter:
        sweeps += 1
        result = g1
        change = sweep(ids, counts, topics, block, alpha, g0, g1, lanes, weight, safe_norm, theta_given)
        theta_given = False
        if change < 0.0:
            return REFUSED
        if change < tol or sweeps == max_iter:
            break
        if not accelerate:
            g0, g1 = g1, g0
            continue
        sweeps += 1
        result = g2
        change = sweep(ids, counts, topics, block, alpha, g1, g2, lanes, weight, safe_norm, False)
        if change < 0.0:
            return REFUSED
        if change < tol or sweeps == max_iter:
            break
        rr = 0.0
        vv = 0.0
        for k in range(K):
            r = g1[k] - g0[k]
            v = g2[k] - g1[k] - r
            rr += r * r
            vv += v * v
        step = -1.0
        if vv > 0.0:
            step = min(-np.sqrt(rr / vv), -1.0)
        for k in range(K):
            r = g1[k] - g0[k]
            v = g2[k] - g1[k] - r
            g0[k] = max(g0[k] - 2.0 * step * r + step * step * v, alpha[k])
    for k in range(K):
        gamma[k] = result[k]
    # the statistics come from the phi of the last sweep, the one that gave gamma (figure 6: phi,
    # then gamma), so gamma = alpha + sum_n c_n phi_n holds for them exactly; its
    # exp(E[log theta]) and token weights are still in lanes[0] and weight
    theta = lanes[0]
    for k in range(K):
        exp_elog_theta[k] = theta[k]
    for j in range(n):
        token_weight[j] = weight[j]
    return sweeps


@njit(error_model="numpy", parallel=True, cache=True)
def estep_batch(indptr, indices, counts, topics, alpha, max_iter, tol, accelerate, safe_norm, n_chunks,
                gamma, exp_elog_theta, token_weight, sweeps, chunk_thread):
    """E-step for every document of a CSR minibatch, parallel over fixed chunks of documents.

    topics is float64, or float32 with safe_norm = SAFE_NORM_SINGLE: then a document may come
    back with sweeps[d] = REFUSED, for the caller to redo in double
    (inference.local_steps.meanfield.MeanField). Each document is fitted independently, so the
    results do not depend on the number of threads or chunks. Scratch arrays are allocated once
    per chunk, not per document. chunk_thread[c] records which thread ran chunk c (to verify
    parallel execution).
    """
    D = indptr.shape[0] - 1
    K = topics.shape[1]
    for c in prange(n_chunks):
        chunk_thread[c] = get_thread_id()
        lo_doc, hi_doc = c * D // n_chunks, (c + 1) * D // n_chunks
        longest = 0
        for d in range(lo_doc, hi_doc):
            longest = max(longest, indptr[d + 1] - indptr[d])
        gammas = np.empty((3, K))
        lanes = np.empty((2, K), dtype=topics.dtype)
        start_theta = np.empty(K, dtype=topics.dtype)
        exp_dirichlet_lanes(np.ones(K), start_theta)
        weight = np.empty(longest, dtype=topics.dtype)
        block = np.empty((K, min(longest, BLOCK_ENTRIES // K)), dtype=topics.dtype)
        for d in range(lo_doc, hi_doc):
            lo = indptr[d]
            hi = indptr[d + 1]
            sweeps[d] = estep_document(indices[lo:hi], counts[lo:hi], topics, alpha, max_iter, tol,
                                       accelerate, safe_norm, start_theta, gamma[d], exp_elog_theta[d],
                                       token_weight[lo:hi], gammas, lanes, weight, block)


@njit(error_model="numpy", parallel=True, cache=True)
def word_topic_statistics(word_ptr, word_docs, word_weight, exp_elog_theta, out):
    """out[j, k] = sum over tokens of word j (in document order) of r_dj * exp(E[log theta_dk]).

    The minibatch is given transposed (CSC: word_ptr over local word ids, word_docs the
    documents in ascending order), so each row of `out` is owned by one thread and summed
    in a fixed order: deterministic whatever the thread count.
    """
    K = out.shape[1]
    for j in prange(out.shape[0]):
        row = out[j]
        for k in range(K):
            row[k] = 0.0
        for p in range(word_ptr[j], word_ptr[j + 1]):
            theta = exp_elog_theta[word_docs[p]]
            r = word_weight[p]
            for k in range(K):
                row[k] += r * theta[k]


@njit(error_model="numpy", parallel=True, cache=True)
def completion_log_likelihood(indptr, indices, counts, theta, topics, out):
    """out[d] = sum_n c_n log(sum_k theta[d, k] topics[w_n, k])  (SVI paper, section 4)."""
    D = indptr.shape[0] - 1
    for d in prange(D):
        total = 0.0
        for p in range(indptr[d], indptr[d + 1]):
            total += counts[p] * np.log(dot(theta[d], topics[indices[p]]))
        out[d] = total
