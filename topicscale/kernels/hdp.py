"""Online-HDP document step: two-level stick breaking, truncations K (corpus) and T (document).

SVI paper (Hoffman, Blei, Wang and Paisley 2013), section 3.3 and figure 9, steps 5-10 (the
algorithm of Wang, Paisley and Blei 2011). For one document with distinct words w_n and counts
c_n, and the corpus level held fixed:

    E[n, k]       = E[log beta_{k, w_n}]   rows of `elog_beta` (V' x K, word-major)
    elog_sigma[k] = E[log sigma_k(V)]      corpus sticks (fig. 8)
    zeta[i, k]    q(c_di = k), i = 1..T    which corpus topic document slot i points to
    phi[n, i]     q(z_dn = i)              which document slot token n belongs to
    gamma_i = (1 + sum_n c_n phi_ni, alpha + sum_n c_n sum_{j>i} phi_nj), i < T   (pi_dT = 1)

iterate (fig. 9, step 8 then step 9, counts c_n weighting each distinct word):
    elog_pi[i] = E[log sigma_i(pi_d)] from gamma
    zeta[i, k] proportional to exp(elog_sigma[k] + sum_n c_n phi_ni E[n, k])
    phi[n, i]  proportional to exp(elog_pi[i] + sum_k zeta_ik E[n, k])
until the mean absolute change (over the K topics) of the document's expected topic counts
m_k = sum_i zeta_ik sum_n c_n phi_ni falls below `tol`, or `max_iter` sweeps ran.

Initialisation (fig. 9 steps 5-6, with the symmetry of step 5 broken). Step 5 gives every slot
the same zeta_di, proportional to exp(sum_n E[n, k]); step 6 then gives every word the same
phi_n over the slots, so the slots could only drift apart through the document sticks, and a
document would start as one blend of topics rather than as its separate topics. Instead each
slot i starts from its own share of the document:
    r[n, k]  = exp(E[n, k]) / sum_k' exp(E[n, k'])      token n's topic posterior on its own
    mass[k]  = sum_n c_n r[n, k]                        the document's mass on topic k
    k_i      = the i-th heaviest topic by mass (ties: lower index first; none if i > K)
    zeta[i, k] proportional to exp(sum_n c_n r[n, k_i] E[n, k])    (step 5 on slot i's share)
so slot 1 starts at the topic that explains most of the document, slot 2 at the next one, and
so on (the size-biased order the document sticks expect); a slot without a share (i > K)
starts uniform. Step 6 is unchanged: phi[n, i] proportional to exp(sum_k zeta_ik E[n, k]).
This is deterministic (no random numbers) and depends only on the document and the topics.
(Measured alternative: a greedy cover, slot i fitted by step 5 to the tokens the earlier slots
explain badly, starts documents in one or two slots; on planted data a single topic blending all
of them then grew to 60-70% of the corpus weight in two runs of three.)

Sparsity: terms with phi_ni < TINY (1e-15) in the zeta update, and with zeta_ik < TINY in the
phi update of a slot that points to fewer than K/4 topics, are skipped: they change an exponent
by less than (tokens) * TINY * max|E[log beta]|, resp. K * TINY * max|E[log beta]| (about 1e-9
for eta >= 0.01 and documents of up to 10^4 tokens). Once the topics have formed, most slots
point to one or two topics and most tokens sit in a few slots. The dense products (the bulk of
the work while the topics are still random) are blocked four tokens (zeta) or two slots (phi)
at a time; every sum runs in a fixed order, so results are deterministic.

Outputs for the statistics: zeta, phi and, per slot, the probability that it holds at least
one token, occupied_i = 1 - prod_n (1 - phi_ni)^c_n (the slot is a "table" of the Chinese
restaurant franchise; see inference/global_steps/hdp.py for why the corpus sticks count these).

The expected topic proportions over the corpus topics are the two-level stick expectation
    theta[k] = sum_i E[sigma_i(pi_d)] zeta_ik,  E[sigma_i(pi)] = E[pi_i] prod_{j<i} E[1 - pi_j]
(q factorises, so E[theta_dk] = sum_i E[sigma_i(pi_d)] q(c_di = k)); they sum to one.
"""
import numpy as np
from numba import get_thread_id, njit, prange

from .meanfield import dot
from .special import digamma

TINY = 1e-15


@njit(cache=True, nogil=True)
def softmax_rows(x):
    """Each row of x (2-d) replaced by exp(x - max) / sum exp(x - max), in place."""
    for r in range(x.shape[0]):
        row = x[r]
        top = row[0]
        for k in range(1, row.shape[0]):
            if row[k] > top:
                top = row[k]
        total = 0.0
        for k in range(row.shape[0]):
            row[k] = np.exp(row[k] - top)
            total += row[k]
        inv = 1.0 / total
        for k in range(row.shape[0]):
            row[k] *= inv


@njit(cache=True, nogil=True)
def doc_sticks(slot_counts, alpha, elog_pi, e_sigma):
    """E[log sigma_i(pi)] and E[sigma_i(pi)] of the document sticks given the slot counts
    n_i = sum_n c_n phi_ni: gamma_i = (1 + n_i, alpha + sum_{j>i} n_j) for i < T, pi_T = 1."""
    T = slot_counts.shape[0]
    tail = 0.0
    for i in range(T - 1, -1, -1):      # e_sigma[i] holds sum_{j>i} n_j for now
        e_sigma[i] = tail
        tail += slot_counts[i]
    log_rest = 0.0
    rest = 1.0
    for i in range(T - 1):
        g1 = 1.0 + slot_counts[i]
        g2 = alpha + e_sigma[i]
        psi_total = digamma(g1 + g2)
        elog_pi[i] = log_rest + digamma(g1) - psi_total
        log_rest += digamma(g2) - psi_total
        e_sigma[i] = rest * g1 / (g1 + g2)
        rest *= g2 / (g1 + g2)
    elog_pi[T - 1] = log_rest
    e_sigma[T - 1] = rest


@njit(cache=True, nogil=True, inline="always")
def dot2(a, b, x):
    """(sum_k a_k x_k, sum_k b_k x_k) in one pass over x, each with four partial sums added in
    the same order as `dot`."""
    K = x.shape[0]
    K4 = K - K % 4
    a0 = a1 = a2 = a3 = 0.0
    b0 = b1 = b2 = b3 = 0.0
    for k in range(0, K4, 4):
        x0 = x[k]
        x1 = x[k + 1]
        x2 = x[k + 2]
        x3 = x[k + 3]
        a0 += a[k] * x0
        a1 += a[k + 1] * x1
        a2 += a[k + 2] * x2
        a3 += a[k + 3] * x3
        b0 += b[k] * x0
        b1 += b[k + 1] * x1
        b2 += b[k + 2] * x2
        b3 += b[k + 3] * x3
    for k in range(K4, K):
        a0 += a[k] * x[k]
        b0 += b[k] * x[k]
    return (a0 + a1) + (a2 + a3), (b0 + b1) + (b2 + b3)


@njit(cache=True, nogil=True)
def slot_support(zeta, support, n_support):
    """support[i, :n_support[i]] = the topics k with zeta[i, k] >= TINY (ascending)."""
    for i in range(zeta.shape[0]):
        m = 0
        for k in range(zeta.shape[1]):
            if zeta[i, k] >= TINY:
                support[i, m] = k
                m += 1
        n_support[i] = m


@njit(cache=True, nogil=True)
def update_phi(ids, counts, elog_beta, zeta, elog_pi, support, n_support, phi, slot_counts):
    """phi[n, i] proportional to exp(elog_pi[i] + sum_k zeta_ik E[n, k]) (fig. 9 step 9, or
    step 6 with elog_pi = 0); slot_counts[i] = sum_n c_n phi_ni."""
    T, K = zeta.shape
    for i in range(T):
        slot_counts[i] = 0.0
    for n in range(ids.shape[0]):
        row = elog_beta[ids[n]]
        p = phi[n]
        i = 0
        while i < T:
            if i + 1 < T and 4 * n_support[i] >= K and 4 * n_support[i + 1] >= K:
                s0, s1 = dot2(zeta[i], zeta[i + 1], row)
                p[i] = elog_pi[i] + s0
                p[i + 1] = elog_pi[i + 1] + s1
                i += 2
                continue
            m = n_support[i]
            if 4 * m >= K:
                s = dot(zeta[i], row)
            else:
                s = 0.0
                for j in range(m):
                    k = support[i, j]
                    s += zeta[i, k] * row[k]
            p[i] = elog_pi[i] + s
            i += 1
        top = p[0]
        for i in range(1, T):
            if p[i] > top:
                top = p[i]
        total = 0.0
        for i in range(T):
            p[i] = np.exp(p[i] - top)
            total += p[i]
        inv = 1.0 / total
        for i in range(T):
            p[i] *= inv
            slot_counts[i] += counts[n] * p[i]


@njit(cache=True, nogil=True)
def update_zeta_row(ids, counts, elog_beta, elog_sigma, phi, i, z, weight, picked):
    """z[k] = elog_sigma[k] + sum_n c_n phi_ni E[n, k] (fig. 9 step 8 before normalising), over
    the tokens with phi_ni >= TINY, four at a time (weight, picked: scratch of length N)."""
    K = z.shape[0]
    m = 0
    for n in range(ids.shape[0]):
        if phi[n, i] >= TINY:
            weight[m] = counts[n] * phi[n, i]
            picked[m] = n
            m += 1
    for k in range(K):
        z[k] = elog_sigma[k]
    j = 0
    while j + 4 <= m:
        r0 = elog_beta[ids[picked[j]]]
        r1 = elog_beta[ids[picked[j + 1]]]
        r2 = elog_beta[ids[picked[j + 2]]]
        r3 = elog_beta[ids[picked[j + 3]]]
        w0 = weight[j]
        w1 = weight[j + 1]
        w2 = weight[j + 2]
        w3 = weight[j + 3]
        for k in range(K):
            z[k] += (w0 * r0[k] + w1 * r1[k]) + (w2 * r2[k] + w3 * r3[k])
        j += 4
    while j < m:
        r0 = elog_beta[ids[picked[j]]]
        w0 = weight[j]
        for k in range(K):
            z[k] += w0 * r0[k]
        j += 1


@njit(cache=True, nogil=True)
def estep_document(ids, counts, elog_beta, elog_sigma, alpha, max_iter, tol,
                   zeta, phi, theta, occupied, mass, slot_counts, elog_pi, e_sigma, lognorm,
                   picked, support, n_support):
    """Fit one document (fig. 9 steps 5-10); returns the number of sweeps.

    Outputs: zeta (T x K), phi (N x T), theta (K), occupied (T). Scratch: mass (K), slot_counts,
    elog_pi, e_sigma, n_support (T), lognorm, picked (N), support (T x K). Nothing is allocated.
    """
    T, K = zeta.shape
    N = ids.shape[0]
    # ---- step 5 with the slots' symmetry broken (module docstring)
    for k in range(K):
        mass[k] = 0.0
    for n in range(N):
        row = elog_beta[ids[n]]
        top = row[0]
        for k in range(1, K):
            if row[k] > top:
                top = row[k]
        total = 0.0
        for k in range(K):
            total += np.exp(row[k] - top)
        lognorm[n] = top + np.log(total)
        for k in range(K):
            mass[k] += counts[n] * np.exp(row[k] - lognorm[n])
    for i in range(T):
        best = -1
        for k in range(K):              # the i-th heaviest topic, not taken by an earlier slot
            if mass[k] >= 0.0 and (best < 0 or mass[k] > mass[best]):
                best = k
        z = zeta[i]
        for k in range(K):
            z[k] = 0.0
        if best >= 0:
            mass[best] = -1.0           # taken
            for n in range(N):
                row = elog_beta[ids[n]]
                w = counts[n] * np.exp(row[best] - lognorm[n])
                for k in range(K):
                    z[k] += w * row[k]
    softmax_rows(zeta)
    # ---- step 6: phi from zeta (no document-stick term yet)
    for i in range(T):
        elog_pi[i] = 0.0
    slot_support(zeta, support, n_support)
    update_phi(ids, counts, elog_beta, zeta, elog_pi, support, n_support, phi, slot_counts)
    for k in range(K):
        acc = 0.0
        for i in range(T):
            acc += zeta[i, k] * slot_counts[i]
        mass[k] = acc
    # ---- steps 7-10
    sweeps = 0
    while sweeps < max_iter:
        sweeps += 1
        doc_sticks(slot_counts, alpha, elog_pi, e_sigma)
        for i in range(T):                       # step 8: zeta
            update_zeta_row(ids, counts, elog_beta, elog_sigma, phi, i, zeta[i], lognorm, picked)
        softmax_rows(zeta)
        slot_support(zeta, support, n_support)   # step 9: phi
        update_phi(ids, counts, elog_beta, zeta, elog_pi, support, n_support, phi, slot_counts)
        change = 0.0
        for k in range(K):
            acc = 0.0
            for i in range(T):
                acc += zeta[i, k] * slot_counts[i]
            change += abs(acc - mass[k])
            mass[k] = acc
        if change / K < tol:
            break
    # ---- E[theta] over the corpus topics from the final sticks; occupied slots
    doc_sticks(slot_counts, alpha, elog_pi, e_sigma)
    for k in range(K):
        theta[k] = 0.0
    for i in range(T):
        for k in range(K):
            theta[k] += e_sigma[i] * zeta[i, k]
        occupied[i] = 0.0                        # log prod_n (1 - phi_ni)^c_n for now
    for n in range(N):
        for i in range(T):
            occupied[i] += counts[n] * np.log1p(-min(phi[n, i], 1.0))
    for i in range(T):
        occupied[i] = -np.expm1(occupied[i])
    return sweeps


@njit(parallel=True, cache=True)
def estep_batch(indptr, indices, counts, elog_beta, elog_sigma, alpha, T, max_iter, tol, n_chunks,
                keep, theta, zeta_out, phi_out, tables, sweeps, chunk_thread):
    """The document step for every document of a CSR block, parallel over fixed chunks.

    Documents are fitted independently, so results do not depend on threads or chunks.
    Scratch is allocated once per chunk (sized for the chunk's longest document). With
    keep=True every document's zeta (D x T x K) and phi (nnz x T) are copied out, and
    tables[d, k] = sum_i occupied_di zeta_dik (the expected number of the document's occupied
    slots that point to topic k); otherwise only theta (D x K) and sweeps are written.
    """
    D = indptr.shape[0] - 1
    K = elog_beta.shape[1]
    for c in prange(n_chunks):
        chunk_thread[c] = get_thread_id()
        first = c * D // n_chunks
        last = (c + 1) * D // n_chunks
        longest = 0
        for d in range(first, last):
            longest = max(longest, indptr[d + 1] - indptr[d])
        zeta = np.empty((T, K))
        phi = np.empty((longest, T))
        occupied = np.empty(T)
        mass = np.empty(K)
        slot_counts = np.empty(T)
        elog_pi = np.empty(T)
        e_sigma = np.empty(T)
        lognorm = np.empty(longest)
        picked = np.empty(longest, dtype=np.int64)
        support = np.empty((T, K), dtype=np.int64)
        n_support = np.empty(T, dtype=np.int64)
        for d in range(first, last):
            lo = indptr[d]
            hi = indptr[d + 1]
            n = hi - lo
            sweeps[d] = estep_document(indices[lo:hi], counts[lo:hi], elog_beta, elog_sigma, alpha,
                                       max_iter, tol, zeta, phi[:n], theta[d], occupied, mass,
                                       slot_counts, elog_pi, e_sigma, lognorm[:n], picked[:n], support,
                                       n_support)
            if keep:
                zeta_out[d] = zeta
                phi_out[lo:hi] = phi[:n]
                row = tables[d]
                for k in range(K):
                    row[k] = 0.0
                for i in range(T):
                    for k in range(K):
                        row[k] += occupied[i] * zeta[i, k]


@njit(parallel=True, cache=True)
def word_topic_statistics(word_ptr, word_tokens, word_docs, counts, phi, zeta, out):
    """out[j, k] = sum over the tokens p of word j of c_p sum_i phi[p, i] zeta[doc(p), i, k]
    (fig. 9 step 11: sum_i zeta_dik sum_n phi_dni w_dn, per word).

    The minibatch is given transposed (word_ptr over local word ids; word_tokens the token
    positions and word_docs their documents, in document order), so each row of `out` is
    owned by one thread and summed in a fixed order: deterministic whatever the threads.
    """
    T = phi.shape[1]
    K = out.shape[1]
    for j in prange(out.shape[0]):
        row = out[j]
        for k in range(K):
            row[k] = 0.0
        for q in range(word_ptr[j], word_ptr[j + 1]):
            p = word_tokens[q]
            d = word_docs[q]
            for i in range(T):
                w = counts[p] * phi[p, i]
                if w != 0.0:
                    z = zeta[d, i]
                    for k in range(K):
                        row[k] += w * z[k]
