"""Global steps of the correlated topic model (Wang and Blei 2013): "batch", variational EM over
the corpus as in the paper's sec. 5.1, and "svi", its stochastic (online-EM) version; both take
the CTMStats of any CTM local step (local_steps/ctm.py, local_steps/bbvi.py).

M-step, from the documents' q(theta_d) = N(mu_d, Sigma_d) and q(z):
    beta_k  proportional to  eta + sum_d sum_n c_dn phi_dnk          (lam = eta + expected counts)
    mu_0    = mean_d mu_d
    Sigma_0 = mean_d (Sigma_d + (mu_d - mu_0)(mu_d - mu_0)')  shrunk toward its diagonal
              (models/ctm.py: shrink_covariance, with the corpus's document count)
`batch` sums the statistics over one epoch of the driver's stream (which visits every document
once) and applies the M-step when the epoch is complete; `svi` keeps online averages of the same
statistics with rho_t = (tau + t)^-kappa (online EM; rho_0 = 1 with the default tau = 1):
    lam     <- (1 - rho) lam     + rho (eta + D/|S| sum_{d in S} c phi)
    m1      <- (1 - rho) m1      + rho mean_{d in S} mu_d
    m2      <- (1 - rho) m2      + rho mean_{d in S} (Sigma_d + mu_d mu_d')
    mu_0 = m1, Sigma_0 = shrink(m2 - m1 m1')   (one set of weights for m1 and m2: PSD scatter)

Initialisation: the paper draws the topics from a uniform Dirichlet. From such topics (or from
LDA's near-uniform ones) EM for the CTM often settles with two topics merged: the logistic normal
with Sigma_0 = I does not push documents toward few topics the way a sparse Dirichlet does. So,
by default (seeding=True), before the first minibatch of a fresh model both global steps replace
the random topics by topics seeded from that minibatch's documents (greedy k-means++ on their
Hellinger profiles plus a few Lloyd rounds: `seed_topics`); on planted CTM data and on the State
of the Union paragraphs this merged fewer topics and scored better on held-out documents than the
paper's start.
"""
import numpy as np

from ...kernels.topic_matrix import step_towards
from ..local_steps.base import estep_statistics, on_documents, step_metrics
from ..schedule import advance, robbins_monro


def seed_topics(batch, n_topics, eta, rng, rounds=5, smoothing=0.1):
    """Topics (V' x K over the batch's distinct words, and those words) from clusters of the
    minibatch's documents: greedy k-means++ seeding (Arthur and Vassilvitskii 2007: of 2 + log K
    candidates drawn in proportion to the distance, the one that lowers the total distance most)
    on the documents' square-root word profiles (squared Hellinger distance), then `rounds`
    Lloyd iterations.
    Topic k = eta + the word counts of cluster k + `smoothing` x its token count x the batch's
    word distribution. With fewer documents than topics, documents are reused."""
    import scipy.sparse as sp
    words, local = np.unique(batch.indices, return_inverse=True)
    D, W = batch.n_docs, words.shape[0]
    X = sp.csr_matrix((batch.counts, local, batch.indptr), shape=(D, W))
    lengths = np.asarray(X.sum(axis=1)).ravel()
    P = sp.diags(1.0 / np.maximum(lengths, 1e-300)) @ X
    P.data = np.sqrt(P.data)
    P = P.tocsr()
    def distance_to(rows):                                          # D x len(rows)
        return np.maximum(2.0 - 2.0 * (P @ P[rows].T).toarray(), 0.0)

    chosen = [int(rng.integers(D))]
    dist = distance_to(chosen)[:, 0]
    tries = 2 + int(np.log(n_topics))
    for _ in range(1, n_topics):
        total = dist.sum()
        if not total > 0:
            chosen.append(int(rng.integers(D)))
            continue
        candidates = rng.choice(D, size=tries, p=dist / total)
        options = np.minimum(dist[:, None], distance_to(candidates))
        best = int(np.argmin(options.sum(axis=0)))
        chosen.append(int(candidates[best]))
        dist = options[:, best]
    centers = P[chosen].toarray()                                   # K x W
    for _ in range(rounds):
        assign = np.asarray((P @ centers.T).argmax(axis=1)).ravel()
        counts = np.zeros((n_topics, W))
        for k in range(n_topics):
            members = np.flatnonzero(assign == k)
            counts[k] = np.asarray(X[members].sum(axis=0)).ravel() if members.size else X[chosen[k]].toarray()
        centers = np.sqrt(counts / counts.sum(axis=1, keepdims=True))
    background = np.asarray(X.sum(axis=0)).ravel()
    background /= background.sum()
    lam = eta + counts.T + smoothing * counts.sum(axis=1)[None, :] * background[:, None]
    return words, lam


def _seed_fresh_model(algo, batch):
    """Before the first minibatch of a fresh model (nothing seen yet), replace its random topics
    by topics seeded from that minibatch's documents (see seed_topics); words the minibatch does
    not contain get eta in every topic. Deterministic under the algorithm's seed."""
    m = algo.model
    if not algo.seeding or m.step or m.docs_seen or batch.n_docs == 0:
        return
    words, lam = on_documents(batch, seed_topics, m.n_topics, m.eta,
                              np.random.default_rng([algo.seed, 0x5EED]))
    m.lam[...] = m.eta
    m.lam[words] = lam


def _metrics(stats, result, extra):
    return {**extra, **step_metrics(result),
            "bound_per_word": stats.bound / stats.n_tokens if stats.n_tokens else None}


class CTMSVI:
    """Stochastic (online-EM) global step for the CTM: online averages of the topic counts and of
    the logistic normal's first and second moments with rho_t = (tau + t)^-kappa."""
    name = "svi"
    # tau = 1 rather than LDA's 64: on the State of the Union paragraphs (K = 20, one pass,
    # CTM-Laplace) held-out LL -7.918 against -7.962 with tau = 64
    DEFAULTS = {"tau": 1.0, "kappa": 0.7}

    def __init__(self, model, local, corpus_docs, tau=1.0, kappa=0.7, seed=0, seeding=True):
        self.model = model
        self.local = local
        self.corpus_docs = int(corpus_docs)
        self.tau = float(tau)
        self.kappa = float(kappa)
        self.seed = int(seed)
        self.seeding = bool(seeding)

    def step(self, batch):
        _seed_fresh_model(self, batch)
        stats, result = estep_statistics(self.local, batch, self.model)
        self.update(stats)
        return _metrics(stats, result, {"rho": self.last_rho})

    def update(self, stats):
        m = self.model
        rho = robbins_monro(m.step, self.tau, self.kappa)
        step_towards(m.lam, rho, m.eta, stats.topics.words, rho * self.corpus_docs / stats.n_docs,
                     stats.topics.word_topic)
        mean = (1.0 - rho) * m.mu0 + (rho / stats.n_docs) * stats.mu_sum
        second = (1.0 - rho) * m.moment2 + (rho / stats.n_docs) * stats.second_sum
        m.set_moments(mean, second, self.corpus_docs)
        advance(m, stats.n_docs)
        self.last_rho = rho


class CTMBatch:
    """Variational EM (the paper's sec. 5.1): one iteration per epoch of the stream; the M-step
    runs when the epoch's corpus_docs documents have all been seen. The unfinished epoch's sums
    travel in checkpoints."""
    name = "batch"
    DEFAULTS = {}

    def __init__(self, model, local, corpus_docs, seed=0, seeding=True):
        if int(corpus_docs) < 1:
            raise ValueError("batch EM needs corpus_docs >= 1")
        self.model = model
        self.local = local
        self.corpus_docs = int(corpus_docs)
        self.seed = int(seed)
        self.seeding = bool(seeding)
        self._reset()

    def _reset(self):
        K = self.model.n_topics
        self._lam = np.zeros_like(self.model.lam)
        self._mu = np.zeros(K)
        self._second = np.zeros((K, K))
        self._docs = 0
        self._tokens = 0.0
        self._bound = 0.0

    def checkpoint_state(self):
        return {"lam": self._lam, "mu": self._mu, "second": self._second, "docs": np.array([self._docs]),
                "tokens": np.array([self._tokens]), "bound": np.array([self._bound])}

    def restore_state(self, state):
        self._lam = state["lam"].copy()
        self._mu = state["mu"].copy()
        self._second = state["second"].copy()
        self._docs = int(state["docs"][0])
        self._tokens = float(state["tokens"][0])
        self._bound = float(state["bound"][0])

    def step(self, batch):
        _seed_fresh_model(self, batch)
        stats, result = estep_statistics(self.local, batch, self.model)
        epoch_bound = self.accumulate(stats)
        extra = {"updated": epoch_bound is not None,
                 "epoch_docs": self.corpus_docs if epoch_bound is not None else self._docs}
        if epoch_bound is not None:
            extra["epoch_bound_per_word"] = epoch_bound
        return _metrics(stats, result, extra)

    def accumulate(self, stats):
        """Add a minibatch; at the end of an epoch run the M-step and return the epoch's per-word
        approximate bound (else None)."""
        m = self.model
        self._lam[stats.topics.words] += stats.topics.word_topic
        self._mu += stats.mu_sum
        self._second += stats.second_sum
        self._docs += stats.n_docs
        self._tokens += stats.n_tokens
        self._bound += stats.bound
        if self._docs < self.corpus_docs:
            advance(m, stats.n_docs, updated=False)
            return None
        m.lam[...] = m.eta + self._lam
        m.set_moments(self._mu / self._docs, self._second / self._docs, self._docs)
        advance(m, stats.n_docs)
        bound = self._bound / self._tokens if self._tokens else float("nan")
        self._reset()
        return bound
