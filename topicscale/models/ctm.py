"""Correlated topic model state (Blei and Lafferty 2007; fitted as in Wang and Blei 2013, sec. 4.1).

    theta_d ~ N(mu_0, Sigma_0),  z_dn ~ Mult(softmax(theta_d)),  w_dn ~ Mult(beta_{z_dn})

Stored:
  lam      V x K, word-major like LDA: lam[w, k] = eta + expected count of word w in topic k, so
           beta_k = lam[:, k] / sum_w lam[w, k] (the M-step, smoothed by eta: no word scores -inf)
  mu0      K, the logistic-normal mean
  sigma0   K x K, its covariance (shrunk toward its diagonal, see `shrink_covariance`)
  moment2  K x K, the centred, unshrunk average of E_q[theta theta'] = Sigma_d + mu_d mu_d' that
           sigma0 was computed from; the stochastic global step averages it online.

softmax is invariant to adding a constant to theta, so the data identify mu_0 and Sigma_0 only
up to the direction (1, ..., 1); the M-step fixes that gauge (`set_moments`: mu_0 sums to zero,
and theta's mean over topics is independent of the rest with their average variance), so that
independent topics come out uncorrelated in Sigma_0 and `correlations()`.

This module imports no numba (so `topicscale topics` stays fast).
"""
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from . import store
from .topics import DEFAULT_ETA, DEFAULT_TOPICS


class CTMPrior(NamedTuple):
    """What the document step takes: mu_0, Lambda = Sigma_0^-1 and log |Sigma_0|."""
    mu0: np.ndarray
    precision: np.ndarray
    logdet: float


def shrink_covariance(scatter, n_docs):
    """Sigma_0 = (n S + K diag(S)) / (n + K): the scatter S = mean_d (Sigma_d + (mu_d - mu_0)(mu_d - mu_0)')
    shrunk toward its diagonal as if K pseudo-documents with uncorrelated topics were added (the
    mode of an inverse-Wishart-like prior centred on diag(S)). diag(S) > 0 (every Sigma_d is
    positive definite), so Sigma_0 is positive definite even when n < K; with n >> K it is the
    maximum-likelihood estimate of Blei and Lafferty's M-step."""
    S = 0.5 * (scatter + scatter.T)
    K = S.shape[0]
    n = max(float(n_docs), 0.0)
    diag = np.diag(np.maximum(np.diag(S), 1e-10))
    return (n * S + K * diag) / (n + K)


@dataclass
class CTMModel:
    lam: np.ndarray                 # V x K
    mu0: np.ndarray                 # K
    sigma0: np.ndarray              # K x K
    moment2: np.ndarray             # K x K, average of Sigma_d + mu_d mu_d'
    eta: float
    vocab: list
    step: int = 0
    docs_seen: int = 0
    settings: dict = field(default_factory=dict)
    kind = "ctm"

    @property
    def n_topics(self):
        return self.lam.shape[1]

    @property
    def n_words(self):
        return self.lam.shape[0]

    @classmethod
    def initial(cls, vocab, n_topics, eta, rng, settings=None):
        """Topics drawn from a uniform Dirichlet (lam ~ Gamma(1, 1), the paper's sec. 5.1 start),
        mu_0 = 0, Sigma_0 = I (Blei and Lafferty's start)."""
        K = int(n_topics)
        lam = rng.gamma(1.0, 1.0, size=(len(vocab), K))
        return cls(lam=lam, mu0=np.zeros(K), sigma0=np.eye(K), moment2=np.eye(K), eta=float(eta),
                   vocab=list(vocab), settings=dict(settings or {}))

    @classmethod
    def from_config(cls, vocab, config, rng):
        """A new model from fit settings: n_topics (default 100), eta (default 0.01).
        --alpha has no meaning here (the proportions' prior is learned) and is refused."""
        if config.get("alpha") is not None:
            from ..errors import TopicscaleError
            raise TopicscaleError("--alpha does not apply to --model ctm (its logistic-normal prior "
                                  "mu_0, Sigma_0 is fitted)")
        K = config.get("n_topics") or DEFAULT_TOPICS
        eta = config.get("eta")
        return cls.initial(vocab, K, DEFAULT_ETA if eta is None else eta, rng)

    # ------------------------------------------------------------------ what the local step takes
    def estep_topics(self, words=None):
        """The topics the document step uses: E[beta] (a point estimate), word-major rows."""
        beta = self.expected_beta()
        return np.ascontiguousarray(beta if words is None else beta[words])

    def local_prior(self):
        """CTMPrior(mu_0, Sigma_0^-1, log |Sigma_0|) by a Cholesky factorisation."""
        L = np.linalg.cholesky(self.sigma0)
        inv_L = np.linalg.inv(L)
        precision = inv_L.T @ inv_L
        precision = 0.5 * (precision + precision.T)
        return CTMPrior(np.ascontiguousarray(self.mu0, dtype=np.float64), np.ascontiguousarray(precision),
                        float(2.0 * np.log(np.diag(L)).sum()))

    # ------------------------------------------------------------------ M-step of the prior
    def set_moments(self, mean, second, n_docs):
        """The M-step of the logistic-normal prior from the averages of mu_d and of
        Sigma_d + mu_d mu_d' over n_docs documents:
            mu_0 = C mean,   Sigma_0 = shrink(S_c + a 11'/K, n_docs),   S_c = C (second - mean mean') C
        with C = I - 11'/K, a = trace(S_c) / (K - 1). Only the centred parts are identified
        (softmax ignores the direction 1), so the fit is put in the isotropic gauge: theta's mean
        over topics is independent of the rest, with the average variance of the others, which
        makes independent topics come out uncorrelated; this changes no probability of the model."""
        K = self.n_topics
        C = np.eye(K) - 1.0 / K
        m1 = C @ np.asarray(mean, dtype=np.float64)
        m2 = C @ np.asarray(second, dtype=np.float64) @ C
        m2 = 0.5 * (m2 + m2.T)
        scatter = m2 - np.outer(m1, m1)
        a = np.trace(scatter) / (K - 1) if K > 1 else 1.0
        self.mu0 = m1
        self.moment2 = m2
        self.sigma0 = shrink_covariance(scatter + a / K, n_docs)

    # ------------------------------------------------------------------ common model contract
    def expected_beta(self):
        """beta_kw = lam_wk / sum_v lam_vk, word-major (V x K)."""
        return self.lam / self.lam.sum(axis=0)[None, :]

    def topic_weights(self):
        """Share of the corpus's tokens assigned to each topic: sum_w (lam_wk - eta), normalised."""
        mass = np.maximum(self.lam.sum(axis=0) - self.eta * self.n_words, 0.0)
        total = mass.sum()
        return mass / total if total > 0 else np.full(self.n_topics, 1.0 / self.n_topics)

    def token_weights(self):
        """The tokens' share of each topic: its weight (topic_weights)."""
        return self.topic_weights()

    def display_order(self, show_all=True):
        return np.arange(self.n_topics)

    def correlations(self):
        """K x K correlation matrix of Sigma_0."""
        sd = np.sqrt(np.diag(self.sigma0))
        corr = self.sigma0 / np.outer(sd, sd)
        np.fill_diagonal(corr, 1.0)
        return corr

    def strongest_pairs(self, n):
        """The n topic pairs (i < j) with the highest correlation, highest first."""
        corr = self.correlations()
        i, j = np.triu_indices(self.n_topics, k=1)
        order = np.lexsort((j, i, -corr[i, j]))[:n]
        return [(int(i[o]), int(j[o]), float(corr[i[o], j[o]])) for o in order]

    def describe(self):
        out = {"topics": self.n_topics, "vocabulary": self.n_words, "eta": self.eta, "step": self.step,
               "docs_seen": self.docs_seen}
        pairs = self.strongest_pairs(1)
        if pairs:
            i, j, r = pairs[0]
            out["top_correlation"] = f"topics {i} and {j}: {r:+.3f}"
        return out

    def is_finite(self):
        """No infinite or NaN entry in lambda (checked through its column sums, a parallel pass),
        mu0 or sigma0."""
        from ..kernels.topic_matrix import column_sums          # imports numba: only when needed
        return bool(np.all(np.isfinite(column_sums(self.lam))) and np.all(np.isfinite(self.mu0))
                    and np.all(np.isfinite(self.sigma0)))

    def stored(self):
        meta = {"model": self.kind, "n_topics": self.n_topics, "n_words": self.n_words, "eta": self.eta,
                "step": self.step, "docs_seen": self.docs_seen, "settings": self.settings}
        return meta, {"lambda": self.lam, "mu0": self.mu0, "sigma0": self.sigma0, "moment2": self.moment2}

    def save(self, path):
        store.save(path, *self.stored(), self.vocab)

    @classmethod
    def from_stored(cls, meta, arrays, vocab):
        return cls(lam=arrays["lambda"], mu0=arrays["mu0"], sigma0=arrays["sigma0"],
                   moment2=arrays["moment2"], eta=meta["eta"], vocab=vocab, step=meta["step"],
                   docs_seen=meta["docs_seen"], settings=meta["settings"])
