"""Correlated topic model: local steps (Laplace and delta-method variational inference, Wang and
Blei 2013, secs. 3.1-3.4 and app. B; kernel in kernels/ctm.py) and global steps (variational
EM over the corpus as in the paper's sec. 5.1, and its stochastic version).

Global step (M-step), from the documents' q(theta_d) = N(mu_d, Sigma_d) and q(z):
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
Hellinger profiles plus a few Lloyd rounds: `seed_topics`). On planted CTM data this turned
4 merged runs out of 6 into 6 recovered; on the State of the Union paragraphs (K = 20, one pass of
svi) it gave held-out LL -7.962 against -8.009 from the paper's start.

The predictive for document completion: `.theta` of a local step's result is E_q[softmax(theta)],
the quantity LDA's E_q[theta] is (so scores are comparable across models), estimated by Monte
Carlo with `samples` antithetic draws from q(theta) that are common to all documents and fixed
by `seed`. The paper's plug-in softmax(E_q[theta]) (sec. 5.1) is `.theta_paper`, and a local
step built with predictive="paper" returns it as `.theta`.
"""
import math
from dataclasses import dataclass

import numpy as np

from ..kernels import ctm as kernel
from ..kernels.meanfield import word_topic_statistics
from ..kernels.minibatch import distinct_words, word_major
from ..kernels.topic_matrix import step_towards
from ..stats import SufficientStats
from .entries import check_topics_rows
from .local import estep_statistics, step_metrics
from .schedule import advance, robbins_monro


@dataclass
class CTMResult:
    mu: np.ndarray               # D x K, E_q[theta_d]
    var: np.ndarray              # D x K, diag Sigma_d (laplace: nan unless moments were asked for)
    mean_proportions: np.ndarray  # D x K, E_q[softmax(theta_d)] (Monte Carlo) or softmax(mu_d)
    token_weight: np.ndarray     # nnz, c_n / (pi_d . beta_{w_n})
    sweeps: np.ndarray           # D, alternations of q(z) and q(theta)
    bound: np.ndarray            # D, the approximate objective of eq. 21 (completed)
    threads_used: int
    predictive: str = "mean"

    @property
    def theta_paper(self):
        """softmax(E_q[theta_d]): the paper's plug-in predictive (sec. 5.1)."""
        z = self.mu - self.mu.max(axis=1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=1, keepdims=True)

    @property
    def theta(self):
        """Topic proportions for prediction: E_q[softmax(theta_d)] (default) or the paper's."""
        return self.theta_paper if self.predictive == "paper" else self.mean_proportions


@dataclass
class CTMStats:
    """Sufficient statistics of a minibatch for the CTM's M-step; merge and scale like SufficientStats."""
    topics: SufficientStats      # words, sum_d c phi per word, n_docs, n_tokens
    mu_sum: np.ndarray           # K, sum_d mu_d
    second_sum: np.ndarray       # K x K, sum_d Sigma_d + mu_d mu_d'
    bound: float                 # sum_d of the approximate objective

    @property
    def n_docs(self):
        return self.topics.n_docs

    @property
    def n_tokens(self):
        return self.topics.n_tokens

    def merge(self, other):
        return CTMStats(self.topics.merge(other.topics), self.mu_sum + other.mu_sum,
                        self.second_sum + other.second_sum, self.bound + other.bound)

    def scaled(self, factor):
        return CTMStats(self.topics.scaled(factor), self.mu_sum * factor, self.second_sum * factor,
                        self.bound * factor)


class _CTMLocal:
    """Nonconjugate variational inference of each document (figure 1 of the paper).

    max_iter: cap on alternations of q(z) and q(theta); tol: stop when the approximate objective
    (eq. 21) changes by less than tol per token; newton_iter / gtol: the q(theta) update's Newton
    steps and gradient tolerance (max |grad| <= gtol (1 + N)); samples: Monte Carlo draws for
    E_q[softmax(theta)] (antithetic pairs, common to all documents, from `seed`); predictive:
    "mean" (E_q[softmax(theta)]) or "paper" (softmax(E_q[theta])) as the result's .theta.
    """
    method = None
    name = None

    def __init__(self, max_iter=100, tol=1e-3, seed=0, samples=200, predictive="mean", newton_iter=50,
                 gtol=1e-9):
        if predictive not in ("mean", "paper"):
            raise ValueError("predictive must be 'mean' or 'paper'")
        self.max_iter = int(max_iter)
        self.tol = float(tol)
        self.seed = int(seed)
        self.samples = int(samples)
        self.predictive = predictive
        self.newton_iter = int(newton_iter)
        self.gtol = float(gtol)
        self._eps = {}

    def draws(self, K):
        """The standard-normal draws (samples x K, antithetic pairs) shared by every document."""
        if K not in self._eps:
            half = max(1, (self.samples + 1) // 2)
            e = np.random.default_rng([self.seed, 0xC7, K]).standard_normal((half, K))
            self._eps[K] = np.ascontiguousarray(np.concatenate([e, -e]))
        return self._eps[K]

    def run(self, indptr, indices, counts, topics, prior, moments=False, proportions=True):
        """The kernel on a CSR block; returns (CTMResult, per-chunk second-moment sums or None)."""
        D, K = indptr.shape[0] - 1, topics.shape[1]
        n_chunks = max(1, -(-D // kernel.CHUNK_DOCS))
        mu = np.empty((D, K))
        var = np.empty((D, K))
        theta = np.empty((D, K))
        token_weight = np.empty(indices.shape[0])
        sweeps = np.zeros(D, dtype=np.int64)
        bound = np.empty(D)
        second = np.empty((n_chunks if moments else 0, K, K))
        chunk_thread = np.full(n_chunks, -1, dtype=np.int64)
        use_mc = proportions and self.predictive == "mean"
        eps = self.draws(K) if use_mc else np.empty((0, K))
        kernel.fit_batch(self.method, np.asarray(indptr, dtype=np.int64), indices,
                         np.asarray(counts, dtype=np.float64), np.ascontiguousarray(topics, dtype=np.float64),
                         prior.mu0, prior.precision, float(prior.logdet), self.max_iter, self.tol,
                         self.newton_iter, self.gtol, eps, bool(moments), mu, var, theta, token_weight,
                         sweeps, bound, second, chunk_thread)
        threads = len(np.unique(chunk_thread[chunk_thread >= 0]))
        result = CTMResult(mu, var, theta, token_weight, sweeps, bound, threads, self.predictive)
        return result, (second if moments else None)

    def fit(self, indptr, indices, counts, topics, prior):
        """Fit each document of a CSR block whose `indices` index rows of `topics` (V' x K, beta)."""
        return self.run(indptr, indices, counts, topics, prior)[0]

    def estep_topics(self, model, words=None):
        """The topics the document step runs on: beta rows (V' x K, a point estimate: E[beta])
        of the given words (all when None), the model's estep_topics."""
        return model.estep_topics(words)

    def statistics(self, batch, model, topics, seed=None):
        """Document step on a minibatch (Rows) given `topics`, the beta rows of its sorted
        distinct words (estep_topics), and its CTMStats for the global step. `seed` is unused:
        the Monte Carlo draws come from the step's own seed (and, for BBVI, the block)."""
        words, local = distinct_words(batch.indices)
        beta = check_topics_rows(topics, words.shape[0], model.n_topics)
        result, second = self.run(batch.indptr, local, batch.counts, beta, model.local_prior(),
                                  moments=True, proportions=False)
        # phi_nk = r_n / c_n pi_k beta_wk: sum_d c phi = beta_wk sum_d r_dn pi_dk (as LDA's E-step)
        word_ptr, order, doc = word_major(batch.indptr, local, words.shape[0])
        pi = result.mean_proportions              # softmax(mu_d) from the kernel (proportions=False)
        word_topic = np.empty((words.shape[0], model.n_topics))
        word_topic_statistics(word_ptr, doc, result.token_weight[order], pi, word_topic)
        word_topic *= beta
        second_sum = np.zeros((model.n_topics, model.n_topics))
        for part in second:                       # chunk order: independent of threads
            second_sum += part
        mu_sum = np.zeros(model.n_topics)
        for row in result.mu:
            mu_sum += row
        stats = CTMStats(SufficientStats(words, word_topic, batch.n_docs, batch.n_tokens),
                         mu_sum, second_sum, math.fsum(result.bound))
        return stats, result


class Laplace(_CTMLocal):
    """Laplace variational inference (sec. 3.1): mu = argmax f by Newton's method with a
    backtracking line search, Sigma = -hess f(mu)^-1 (full covariance)."""
    method = kernel.LAPLACE
    name = "laplace"


class Delta(_CTMLocal):
    """Delta-method variational inference (sec. 3.2, eq. 17) with diagonal Sigma (as in the paper's
    CTM experiments, after Braun and McAuliffe 2010)."""
    method = kernel.DELTA
    name = "delta"


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
    words, lam = seed_topics(batch, m.n_topics, m.eta, np.random.default_rng([algo.seed, 0x5EED]))
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
