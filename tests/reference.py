"""Slow, plain-numpy twins of the numba kernels (the kernels are tested against these)."""
import numpy as np
from scipy.special import digamma


def _F(gamma, B, counts, alpha):
    """One coordinate-ascent sweep: gamma -> alpha + sum_n c_n phi_n with phi from gamma."""
    phi = np.exp(digamma(gamma) - digamma(gamma.sum()))[None, :] * B
    phi /= phi.sum(axis=1, keepdims=True)
    return alpha + counts @ phi


def estep_document(ids, counts, topics, alpha, max_iter, tol, accelerate=False):
    """Mean-field E-step of one document (SVI paper eqs. 33-34, figure 6), phi kept explicitly;
    optionally SQUAREM-accelerated (step length S3, projected onto gamma >= alpha). Returns
    gamma and the phi of the last sweep (the one that gave gamma) with its exp(E[log theta])."""
    B = topics[ids]                                           # n x K
    g0 = np.ones(topics.shape[1])
    sweeps = 0
    while True:
        g1 = _F(g0, B, counts, alpha)
        sweeps += 1
        if np.mean(np.abs(g1 - g0)) < tol or sweeps == max_iter:
            gamma, last = g1, g0
            break
        if not accelerate:
            g0 = g1
            continue
        g2 = _F(g1, B, counts, alpha)
        sweeps += 1
        if np.mean(np.abs(g2 - g1)) < tol or sweeps == max_iter:
            gamma, last = g2, g1
            break
        r, v = g1 - g0, g2 - 2 * g1 + g0
        step = min(-np.sqrt((r @ r) / (v @ v)), -1.0) if v @ v > 0 else -1.0
        g0 = np.maximum(g0 - 2 * step * r + step ** 2 * v, alpha)
    exp_elog_theta = np.exp(digamma(last) - digamma(last.sum()))
    phi = exp_elog_theta[None, :] * B
    phi /= phi.sum(axis=1, keepdims=True)
    return gamma, exp_elog_theta, phi, sweeps


def document_bound(gamma, ids, counts, topics, alpha):
    """The document's evidence lower bound with phi at its optimum given gamma (topics fixed)."""
    from scipy.special import gammaln
    elog = digamma(gamma) - digamma(gamma.sum())
    return (counts @ np.log(topics[ids] @ np.exp(elog)) + gammaln(alpha.sum()) - gammaln(alpha).sum()
            + ((alpha - gamma) * elog).sum() - gammaln(gamma.sum()) + gammaln(gamma).sum())


def minibatch_statistics(indptr, indices, counts, topics, alpha, max_iter, tol, n_words, accelerate=False):
    """sum_d sum_n c_dn phi_dnk per word (V x K) and the gammas (D x K)."""
    stats = np.zeros((n_words, topics.shape[1]))
    gammas = []
    for d in range(len(indptr) - 1):
        ids, cts = indices[indptr[d]:indptr[d + 1]], counts[indptr[d]:indptr[d + 1]]
        gamma, _, phi, _ = estep_document(ids, cts, topics, alpha, max_iter, tol, accelerate)
        np.add.at(stats, ids, cts[:, None] * phi)
        gammas.append(gamma)
    return stats, np.array(gammas)


def completion_log_likelihood(indptr, indices, counts, theta, topics):
    return np.array([counts[a:b] @ np.log(topics[indices[a:b]] @ theta[d])
                     for d, (a, b) in enumerate(zip(indptr[:-1], indptr[1:]))])


# ------------------------------------------------------------------ CVB0 (SCVB0 local step)
def lane_sum(x, lanes=8):
    """sum(x) in kernels.lanes.sum_blocks' order: blocks of 8 (the last padded with zeros), even
    and odd blocks summed apart, added, then the lanes ((0+1)+(2+3))+((4+5)+(6+7))."""
    padded = np.zeros(-(-len(x) // lanes) * lanes)
    padded[:len(x)] = x
    even, odd = np.zeros(lanes), np.zeros(lanes)
    for i, block in enumerate(padded.reshape(-1, lanes)):
        if i % 2:
            odd = odd + block
        else:
            even = even + block
    v = even + odd
    return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]))


def cvb0_document(ids, counts, topics, alpha, burn_in=1, s=1.0, tau=10.0, kappa=0.9):
    """Clumped CVB0 of one document (Foulds et al. 2013, eqs. 5 and 9, Algorithm 2).

    Returns gamma = alpha + N_theta and the final pass's m_p * gamma_p per entry (n x K)."""
    K = topics.shape[1]
    length = float(np.sum(counts))
    n_theta = np.full(K, length / K)
    entry = np.zeros((len(ids), K))
    t = 0.0
    for sweep in range(burn_in + 1):
        for p, (w, m) in enumerate(zip(ids, counts)):
            g = topics[w] * (n_theta + alpha)
            g = g / g.sum() if g.sum() > 0 else np.full(K, 1.0 / K)
            rho = min(1.0, s / (tau + t) ** kappa)
            keep = (1.0 - rho) ** m
            n_theta = keep * n_theta + length * (1.0 - keep) * g
            t += m
            if sweep == burn_in:
                entry[p] = m * g
    return alpha + n_theta, entry


def cvb0_statistics(indptr, indices, counts, topics, alpha, n_words, **settings):
    """sum over documents of the final pass's m_p gamma_p per word (n_words x K), and gammas."""
    stats = np.zeros((n_words, topics.shape[1]))
    gammas = []
    for a, b in zip(indptr[:-1], indptr[1:]):
        gamma, entry = cvb0_document(indices[a:b], counts[a:b], topics, alpha, **settings)
        np.add.at(stats, indices[a:b], entry)
        gammas.append(gamma)
    return stats, np.array(gammas)


def expected_tables(gamma, prior):
    """Expected table counts summed over documents (kernels/tables.py): a topic with expected
    count n = gamma - a > 0 and occupancy q = 1 - exp(-n) adds q a (psi(a + n/q) - psi(a))."""
    n = gamma - prior[None, :]
    safe = np.where(n > 0, n, 1.0)
    q = -np.expm1(-safe)
    m = q * prior[None, :] * (digamma(prior[None, :] + safe / q) - digamma(prior[None, :]))
    return np.where(n > 0, m, 0.0).sum(axis=0)


def antoniak_mean(a, n):
    """E[tables] of n customers in a Chinese restaurant with concentration a: sum_{j<n} a/(a+j)."""
    return sum(a / (a + j) for j in range(n))


# ------------------------------------------------------------------ collapsed Gibbs given beta
_MASK64 = (1 << 64) - 1


def splitmix64_uniforms(seed, n):
    """The SplitMix64 stream of kernels/gibbs.py, in plain Python integers."""
    state, out = int(seed) & _MASK64, []
    for _ in range(n):
        state = (state + 0x9E3779B97F4A7C15) & _MASK64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
        z ^= z >> 31
        out.append((z >> 11) * (1.0 / 9007199254740992.0))
    return out


def gibbs_document(ids, counts, topics, alpha, sweeps, burn_in, seed):
    """Collapsed Gibbs over z given topics, theta integrated out; sweep 0 draws each token from
    alpha_k topics[w, k] alone. Returns gamma = alpha + mean kept n_d, the mean kept topic histogram of each entry
    (n x K) and the final z, using the uniforms of splitmix64_uniforms(seed, tokens * sweeps)."""
    K = topics.shape[1]
    entry_of = np.repeat(np.arange(len(ids)), np.rint(counts).astype(int))
    n = len(entry_of)
    u = iter(splitmix64_uniforms(seed, n * sweeps))
    z = np.zeros(n, dtype=int)
    n_dk = np.zeros(K)
    acc = np.zeros(K)
    hist = np.zeros((len(ids), K))
    for sweep in range(sweeps):
        for i in range(n):
            if sweep > 0:
                n_dk[z[i]] -= 1.0
            row = topics[ids[entry_of[i]]]
            placed = 1.0 if sweep > 0 else 0.0
            prob = [(placed * n_dk[k] + alpha[k]) * row[k] for k in range(K)]
            total = 0.0
            for x in prob:
                total += x
            if not 0.0 < total < np.inf:
                prob = [placed * n_dk[k] + alpha[k] for k in range(K)]
                total = 0.0
                for x in prob:
                    total += x
            target = next(u) * total
            k, cum = 0, prob[0]
            while cum <= target and k < K - 1:
                k += 1
                cum += prob[k]
            z[i] = k
            n_dk[k] += 1.0
        if sweep >= burn_in:
            acc += n_dk
            np.add.at(hist, (entry_of, z), 1.0)
    kept = sweeps - burn_in
    return alpha + acc / kept, hist / kept, z


# ------------------------------------------------------------------ online HDP document step
def _softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def hdp_doc_sticks(slot_counts, alpha):
    """E[log sigma_i(pi)] and E[sigma_i(pi)] for gamma_i = (1 + n_i, alpha + sum_{j>i} n_j), pi_T = 1."""
    tail = np.concatenate([np.cumsum(slot_counts[::-1])[::-1][1:], [0.0]])
    g1, g2 = 1.0 + slot_counts[:-1], alpha + tail[:-1]
    elog_pi = np.concatenate([digamma(g1) - digamma(g1 + g2), [0.0]])
    elog_1mpi = np.concatenate([[0.0], np.cumsum(digamma(g2) - digamma(g1 + g2))])
    e_pi = np.concatenate([g1 / (g1 + g2), [1.0]])
    e_rest = np.concatenate([[1.0], np.cumprod(g2 / (g1 + g2))])
    return elog_pi + elog_1mpi, e_pi * e_rest


def hdp_document(ids, counts, elog_beta, elog_sigma, alpha, T, max_iter, tol):
    """Online-HDP document step (SVI paper fig. 9, steps 5-10) with every matrix explicit:
    zeta (T x K), phi (N x T); step 5 on each slot's share of the document (kernels/hdp.py).
    Returns zeta, phi, theta (K), P(slot i occupied) (T) and the number of sweeps."""
    E = elog_beta[ids]                                        # N x K
    K = E.shape[1]
    r = _softmax(E, axis=1)                                   # each token's topic posterior
    mass = counts @ r
    ranked = np.argsort(-mass, kind="stable")[:T]
    Z = np.zeros((T, K))
    for i, k in enumerate(ranked):
        Z[i] = (counts * r[:, k]) @ E
    zeta = _softmax(Z, axis=1)
    phi = _softmax(E @ zeta.T, axis=1)                         # N x T
    n = counts @ phi
    m = n @ zeta
    sweeps = 0
    while sweeps < max_iter:
        sweeps += 1
        elog_pi, _ = hdp_doc_sticks(n, alpha)
        zeta = _softmax(elog_sigma[None, :] + (counts[:, None] * phi).T @ E, axis=1)
        phi = _softmax(elog_pi[None, :] + E @ zeta.T, axis=1)
        n = counts @ phi
        m_new = n @ zeta
        change = np.abs(m_new - m).mean()
        m = m_new
        if change < tol:
            break
    _, e_sigma = hdp_doc_sticks(n, alpha)
    occupied = 1.0 - np.prod((1.0 - phi) ** counts[:, None], axis=0)   # P(slot i holds a token)
    return zeta, phi, e_sigma @ zeta, occupied, sweeps


def hdp_statistics(indptr, indices, counts, elog_beta, elog_sigma, alpha, T, max_iter, tol, n_words):
    """sum_d sum_i zeta_dik sum_n c_dn phi_dni per word (n_words x K), the expected occupied slots
    per topic sum_d sum_i P(slot i occupied) zeta_dik (K), and the thetas (D x K)."""
    K = elog_beta.shape[1]
    stats, tables, thetas = np.zeros((n_words, K)), np.zeros(K), []
    for a, b in zip(indptr[:-1], indptr[1:]):
        zeta, phi, theta, occupied, _ = hdp_document(indices[a:b], counts[a:b], elog_beta, elog_sigma,
                                                     alpha, T, max_iter, tol)
        np.add.at(stats, indices[a:b], counts[a:b, None] * (phi @ zeta))
        tables += occupied @ zeta
        thetas.append(theta)
    return stats, tables, np.array(thetas)


# ------------------------------------------------------------------ full SSMF (dense, small V)
def gamma_quantile_shape_derivative(a, x, rel=1e-3):
    """dR-hat/da at x = R-hat(u, a) for Gamma(a, 1) by eq. 15, -(dQ/da) / q(x), with dQ/da from
    Richardson-extrapolated central differences of scipy's regularised incomplete gamma
    function (the smaller tail, for accuracy), q from scipy.stats. Scalar a and x."""
    from scipy import stats
    from scipy.special import gammainc, gammaincc
    f = (lambda s: -gammaincc(s, x)) if gammainc(a, x) > 0.5 else (lambda s: gammainc(s, x))
    h = rel * a

    def central(step):
        return (f(a + step) - f(a - step)) / (2 * step)

    d1, d2, d3 = central(h), central(h / 2), central(h / 4)
    r1, r2 = (4 * d2 - d1) / 3, (4 * d3 - d2) / 3
    return -((16 * r2 - r1) / 15) / stats.gamma.pdf(x, a)


def ssmf_natural_gradient_dense(lam_k, x_k, counts_k, dR_dlam=None):
    """F^-1 (dt/dbeta dR/dlambda)^T c for one topic with dense V x V matrices, literally eqs.
    34-35 and 38 (Hoffman and Blei 2015): lam_k (V) the Dirichlet parameters, x_k (V) the gamma
    draws beta'_kv, counts_k (V) the topic's word counts; dR_dlam the derivatives dR-hat_v/dlambda_v
    (default: gamma_quantile_shape_derivative)."""
    from scipy.special import polygamma
    V = lam_k.shape[0]
    if dR_dlam is None:
        dR_dlam = np.array([gamma_quantile_shape_derivative(a, x) for a, x in zip(lam_k, x_k)])
    S = x_k.sum()
    beta = x_k / S                                                         # eq. 34
    J = np.diag(1.0 / beta) / S @ (np.eye(V) - np.outer(beta, np.ones(V))) @ np.diag(dR_dlam)  # eq. 35
    F = np.diag(polygamma(1, lam_k)) - polygamma(1, lam_k.sum()) * np.ones((V, V))             # eq. 38
    return np.linalg.solve(F, J.T @ counts_k)


def polish_start(indptr, indices, counts, topics, alpha, sweeps):
    """Responsibilities of each entry from fixed topics (V x K): CVB0 of each document alone."""
    K = topics.shape[1]
    resp = np.empty((indices.shape[0], K), dtype=np.float32)
    for d in range(indptr.shape[0] - 1):
        lo, hi = indptr[d], indptr[d + 1]
        resp[lo:hi] = np.float32(1.0 / K)
        n_dk = np.full(K, counts[lo:hi].sum() / K)
        for _ in range(sweeps):
            for p in range(lo, hi):
                n_dk -= counts[p] * resp[p]
                g = topics[indices[p]] * (np.maximum(n_dk, 0.0) + alpha)
                resp[p] = (g / g.sum()).astype(np.float32)
                n_dk += counts[p] * resp[p]
    return resp


def polish_lane_bounds(indptr, lanes):
    """Document boundaries splitting a block into lanes of about equal entries."""
    D = indptr.shape[0] - 1
    bounds, d = [0], 0
    for lane in range(1, lanes):
        while d < D and indptr[d] < indptr[D] * lane / lanes:
            d += 1
        bounds.append(d)
    return bounds + [D]


def polish_sweep(indptr, indices, counts, resp, n_wk, alpha, eta, relax, lanes=2):
    """One batch CVB0 sweep over a block, in lanes: each lane counts from the block's starting
    n_wk plus its own changes (n_wk and n_dk without the entry's own share), n_k as at the start;
    each entry moves `relax` times the CVB0 update's step, clipped at 0 and renormalised; the
    lanes' changes are added at the end. Returns new (resp, n_wk)."""
    resp, start = resp.copy(), n_wk.copy()
    V = n_wk.shape[0]
    denominator = start.sum(axis=0) + V * eta
    out = start.copy()
    bounds = polish_lane_bounds(indptr, lanes)
    for lane in range(lanes):
        own = start.copy()
        for d in range(bounds[lane], bounds[lane + 1]):
            lo, hi = indptr[d], indptr[d + 1]
            n_dk = counts[lo:hi] @ resp[lo:hi].astype(np.float64)
            for p in range(lo, hi):
                w, m = indices[p], counts[p]
                share = m * resp[p].astype(np.float64)
                n_dk -= share
                g = (np.maximum(own[w] - share, 0.0) + eta) / denominator * (np.maximum(n_dk, 0.0) + alpha)
                before = resp[p].astype(np.float64)
                moved = np.maximum(before + relax * (g / g.sum() - before), 0.0)
                new = (moved / moved.sum()).astype(np.float32)
                own[w] += m * new.astype(np.float64) - share
                n_dk += m * new
                resp[p] = new
        out += own - start
    return resp, out
