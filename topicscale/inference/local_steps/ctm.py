"""The correlated topic model's document step, Laplace and delta-method variational inference
(Wang and Blei 2013, secs. 3.1-3.4 and app. B): local steps "laplace" and "delta", which share
one kernel (kernels/ctm.py, `method` chooses the approximation). Each document's statistics
(CTMStats) feed the CTM's global steps (global_steps/ctm.py).

The predictive for document completion: `.theta` of a local step's result is E_q[softmax(theta)],
the quantity LDA's E_q[theta] is (so scores are comparable across models), estimated by Monte
Carlo with `samples` antithetic draws from q(theta) that are common to all documents and fixed
by `seed`. The paper's plug-in softmax(E_q[theta]) (sec. 5.1) is `.theta_paper`, and a local
step built with predictive="paper" returns it as `.theta`.
"""
import math
from dataclasses import dataclass

import numpy as np

from ...kernels import ctm as kernel
from ...kernels.meanfield import word_topic_statistics
from ...kernels.minibatch import distinct_words, word_major
from ...stats import CTMStats, SufficientStats
from .entries import check_topics_rows


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
