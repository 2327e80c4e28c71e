"""Slow, plain-numpy twins of the numba kernels (the kernels are tested against these)."""
import numpy as np
from scipy.special import digamma


def _F(gamma, B, counts, alpha):
    """One coordinate-ascent sweep: gamma -> alpha + sum_n c_n phi_n with phi from gamma."""
    phi = np.exp(digamma(gamma) - digamma(gamma.sum()))[None, :] * B
    phi /= phi.sum(axis=1, keepdims=True)
    return alpha + counts @ phi


def estep_document(ids, counts, topics, alpha, max_iter, tol, accelerate=False):
    """Mean-field E-step of one document (SVI paper eqs. 33-34), phi kept explicitly;
    optionally SQUAREM-accelerated (step length S3, projected onto gamma >= alpha)."""
    B = topics[ids]                                           # n x K
    g0 = np.ones(topics.shape[1])
    sweeps = 0
    while True:
        g1 = _F(g0, B, counts, alpha)
        sweeps += 1
        if np.mean(np.abs(g1 - g0)) < tol or sweeps == max_iter:
            gamma = g1
            break
        if not accelerate:
            g0 = g1
            continue
        g2 = _F(g1, B, counts, alpha)
        sweeps += 1
        if np.mean(np.abs(g2 - g1)) < tol or sweeps == max_iter:
            gamma = g2
            break
        r, v = g1 - g0, g2 - 2 * g1 + g0
        step = min(-np.sqrt((r @ r) / (v @ v)), -1.0) if v @ v > 0 else -1.0
        g0 = np.maximum(g0 - 2 * step * r + step ** 2 * v, alpha)
    exp_elog_theta = np.exp(digamma(gamma) - digamma(gamma.sum()))
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
