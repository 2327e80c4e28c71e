"""HDP topic model state: topics lambda and corpus sticks (a, b), SVI paper sec. 3.3, figs. 8-9.

The hierarchical Dirichlet process topic model of Wang, Paisley and Blei (2011) in its two-level
stick-breaking form, truncated at K corpus topics (the "corpus truncation"). Paper symbols:

    lam[w, k]   lambda_kw   q(beta_k) = Dirichlet(lambda_k); word-major (V x K) like LDAModel.lam
    a[k], b[k]  a_k^(1), a_k^(2)   q(v_k) = Beta(a_k, b_k), k = 1..K-1; v_K = 1 (truncation)
    omega       omega       corpus concentration, v_k ~ Beta(1, omega)
    alpha       alpha       document concentration, pi_di ~ Beta(1, alpha)
    eta         eta         topic Dirichlet, beta_k ~ Dirichlet(eta)

A topic's corpus-level weight is E[sigma_k(V)] = E[v_k] prod_{l<k} E[1 - v_l] (the v are
independent under q), which sums to one over the K topics because v_K = 1. `topics` lists
topics by this weight and, by default, only those that carry the mass (`carried`): among the
heaviest topics whose weights add up to MASS (99%), or among those whose tokens do; `info`
reports how many topics carry 95% and 99% of the weight, and 99% of the tokens (the effective
number of topics).

Nothing here imports numba (the digamma kernel is imported inside methods), so loading a model
for `topicscale topics` stays fast.
"""
from dataclasses import dataclass

import numpy as np

from .topics import DEFAULT_ETA, DEFAULT_TOPICS, LazyTopics, token_shares

DEFAULT_ALPHA = 1.0        # document concentration
CVB0_ALPHA = 0.2           # ... under a CVB0 document step (default_alpha)
DEFAULT_OMEGA = 1.0        # corpus concentration
DEFAULT_DOCS = 10_000      # corpus size D for the initial topic scale when it is not known
MASS = 0.99                # `topics` without --all: the topics carrying this share of the weight


def default_alpha(local):
    """The document concentration alpha0 when none is given: CVB0_ALPHA under the CVB0 document
    step, else DEFAULT_ALPHA (the paper's, and mean-field's). CVB0 adds the prior alpha0 E[sigma_k]
    to a document's expected counts of every topic, where mean-field weighs a topic by
    exp(psi(alpha0 E[sigma_k] + n_dk)), which all but switches off a topic the document barely
    uses; at the same alpha0 CVB0 spreads each document over more topics, and a smaller alpha0
    scores it higher on held-out documents of the short-document corpora it is chosen for
    (benchmarks/results/hdp.md)."""
    return CVB0_ALPHA if local == "cvb0" else DEFAULT_ALPHA


@dataclass(frozen=True)
class HDPPrior:
    """What a document step needs from the corpus level: E[log sigma_k(V)] (K) and alpha for the
    paper's two-level step; dirichlet = alpha E[sigma_k(V)] (K), the Dirichlet prior of theta_d
    in the direct-assignment view (Teh et al. 2006, sec. 5.3) that the LDA document steps take."""
    elog_sigma: np.ndarray
    alpha: float
    dirichlet: np.ndarray = None


def stick_weights(a, b):
    """E[sigma_k(V)] = E[v_k] prod_{l<k} E[1 - v_l] for k = 1..K, v_k ~ Beta(a_k, b_k), v_K = 1
    (plain numpy: `topics` and `info` need no numba)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    e_v = np.append(a / (a + b), 1.0)
    rest = np.concatenate([[1.0], np.cumprod(b / (a + b))])
    return e_v * rest


def sticks_for_weights(weights, a, b):
    """Beta parameters (a', b') with the concentrations a + b of the sticks (a, b) whose
    E[sigma_k(V)] are `weights` (K, positive, summing to one): v_k = w_k / (1 - sum_{l<k} w_l),
    a'_k = v_k (a_k + b_k), b'_k = (1 - v_k)(a_k + b_k). The remainders are summed from the last
    topic: the weights of unused topics halve topic by topic, far below the rounding of 1 minus
    the others."""
    w = np.asarray(weights, dtype=np.float64)
    left = np.cumsum(w[::-1])[::-1][:-1]            # sum_{l>=k} w_l, summed from the smallest
    v = np.clip(w[:-1] / left, np.finfo(float).tiny, 1.0 - np.finfo(float).eps)
    total = np.asarray(a, dtype=np.float64) + np.asarray(b, dtype=np.float64)
    return v * total, (1.0 - v) * total


def stick_expectations(a, b):
    """(E[sigma_k(V)], E[log sigma_k(V)]) for k = 1..K of sticks v_k ~ Beta(a_k, b_k), v_K = 1.

    E[log sigma_k] = E[log v_k] + sum_{l<k} E[log(1 - v_l)] (fig. 8), with
    E[log v] = psi(a) - psi(a + b) and E[log(1 - v)] = psi(b) - psi(a + b).
    """
    from ..kernels.special import digamma_array    # imports numba: only when needed
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    K = a.shape[0] + 1
    elog_v = np.zeros(K)
    elog_1mv = np.zeros(K)
    if K > 1:
        psi_total = digamma_array(np.ascontiguousarray(a + b))
        elog_v[:-1] = digamma_array(np.ascontiguousarray(a)) - psi_total
        elog_1mv[:-1] = digamma_array(np.ascontiguousarray(b)) - psi_total
    elog_sigma = elog_v + np.concatenate([[0.0], np.cumsum(elog_1mv[:-1])])
    return stick_weights(a, b), elog_sigma


def heaviest(weights, mass=MASS):
    """The heaviest topics that carry `mass` of the weight, heaviest first."""
    order = np.argsort(-np.asarray(weights), kind="stable")
    return order[:carrying(weights, mass)]


def carried(weights, tokens, mass=MASS):
    """The topics among the heaviest that carry `mass` of the weight or among those that carry
    `mass` of the tokens (`tokens`: each topic's share, HDPModel.token_weights; None: the weight
    alone), heaviest by weight first: what `topics` lists and `export` writes of an HDP. The
    sticks count the documents that use a topic, not its words, so a topic of a few long
    documents can hold a share of the tokens many times its weight; dropped by the weight alone,
    it is missing from the listing and its documents from every score of the listed topics."""
    order = np.argsort(-np.asarray(weights), kind="stable")
    keep = np.zeros(order.shape[0], dtype=bool)
    keep[heaviest(weights, mass)] = True
    if tokens is not None:
        keep[heaviest(tokens, mass)] = True
    return order[keep[order]]


def listed(weights, lam, eta, residual):
    """`carried` of topics lambda (V x K) with stick weights `weights`, their tokens counted less
    the initial topics' `residual`; by the weight alone when the residual is not known (None)."""
    return carried(weights, None if residual is None else token_shares(lam, eta, residual))


def carrying(weights, mass):
    """How many of the heaviest topics it takes for their weights to add up to `mass`."""
    w = np.sort(np.asarray(weights))[::-1]
    total = w.sum()
    if total <= 0:
        return int(w.shape[0])
    cum = np.cumsum(w) / total
    return int(min(np.searchsorted(cum, mass - 1e-12) + 1, w.shape[0]))


class HDPModel(LazyTopics):
    """Topics lambda (V x K, held lazily: LazyTopics) and the corpus sticks (a, b) with the
    concentrations alpha (document), omega (corpus) and the topic Dirichlet eta."""
    kind = "hdp"

    def __init__(self, lam, a, b, alpha, omega, eta, vocab, step=0, docs_seen=0, settings=None,
                 residual=None):
        self.lam = lam                  # V x K, lambda_{k,w} stored at [w, k]
        # K: the initial topics' mass still in lambda's column sums (each global step keeps 1 - rho
        # of it), which token_weights leaves out: it is no word of the corpus. None: not known (a
        # model file written before it was kept), and topics are listed by their weight alone
        self.residual = None if residual is None else np.asarray(residual, dtype=np.float64)
        self.a = a                      # K - 1, first Beta parameter of the corpus sticks
        self.b = b                      # K - 1, second Beta parameter
        self.alpha = alpha              # document concentration
        self.omega = omega              # corpus concentration
        self.eta = eta                  # topic Dirichlet
        self.vocab = vocab
        self.step = step                # global updates done (t in rho_t)
        self.docs_seen = docs_seen
        self.settings = {} if settings is None else settings

    @classmethod
    def initial(cls, vocab, n_topics, alpha, omega, eta, rng, corpus_docs=DEFAULT_DOCS, settings=None,
                topics="random"):
        """A model to start SVI from (figure 9, step 1, with the two choices below).

        Topics: lambda_kw - eta ~ Exponential with mean D * 100 / (K V) (the SVI paper's
        footnote 6, for LDA and the HDP): the topics start random, with as much mass as if
        every document's 100 words had been spread at random over the topics. (LDAModel starts
        near-uniform instead; on the HDP that left the corpus sticks, not the words, to pick
        the first topics.) With the step size below 1 from the start (tau > 0), unused topics
        keep this random shape for a while and can still take up documents that the topics in
        use explain badly; a smaller scale (mean 1 or 0.1 at D = 2000) let the first random
        assignments fragment the planted topics of our tests (20 to 45 topics instead of 8).

        Corpus sticks: a_k = 1, b_k = K - 1 - k (k = 0..K-2), the Beta parameters under which
        every topic has the same E[sigma_k(V)] = 1/K and the same E[log sigma_k(V)] =
        psi(1) - psi(K), as the random topics carry no information either. Figure 9 starts
        from the prior, a = 1 and b = omega, where E[log sigma_k(V)] falls by about one nat per
        topic (omega = 1); while the topics are still random that decides which topics the
        first documents use, and they crowded onto the first few (5 to 7 topics for 8 planted
        ones, planted topics merged in pairs; on the NYT bag of words, K = 150, 3 passes,
        kappa = 0.7, tau = 64: held-out per-word log likelihood -7.489 against -7.399).

        topics="near-uniform" starts the topics as LDAModel does instead, lambda_kw ~
        Gamma(100, 1/100), for the LDA document steps of the direct-assignment view
        (inference/global_steps/hdp.py), which start from it as LDA does.
        """
        K, V = int(n_topics), len(vocab)
        if topics == "near-uniform":
            lam = rng.gamma(100.0, 0.01, size=(V, K))
        else:
            lam = eta + rng.exponential(corpus_docs * 100.0 / (K * V), size=(V, K))
        return cls(lam=lam, a=np.ones(K - 1), b=np.arange(K - 1, 0, -1, dtype=np.float64),
                   alpha=float(alpha), omega=float(omega), eta=float(eta), vocab=list(vocab),
                   settings=dict(settings or {}), residual=lam.sum(axis=0) - eta * V)

    @classmethod
    def from_config(cls, vocab, config, rng):
        """A new model from fit settings; unset ones take the HDP defaults: corpus truncation
        K = 100 (n_topics), alpha by the document step (default_alpha), omega = 1, eta = 0.01.
        The corpus size D for the initial scale is config["corpus_docs"], else read from the
        corpus folder config["corpus"]. The paper's document step (local "hdp") starts from
        random topics, an LDA document step from near-uniform ones (`initial`)."""
        def get(name, default):
            value = config.get(name)
            return default if value is None else value
        docs = config.get("corpus_docs")
        if docs is None and config.get("corpus"):
            from ..corpus.shards import open_corpus
            docs = open_corpus(config["corpus"]).n_docs
        local = config.get("local")
        return cls.initial(vocab, int(get("n_topics", DEFAULT_TOPICS)), get("alpha", default_alpha(local)),
                           get("omega", DEFAULT_OMEGA), get("eta", DEFAULT_ETA), rng,
                           corpus_docs=docs or DEFAULT_DOCS,
                           topics="random" if local in (None, "hdp") else "near-uniform")

    # ------------------------------------------------------------------ expectations
    def estep_topics(self, words=None):
        """The topics the document step uses: E[log beta] (log space, V' x K)."""
        return self.elog_beta(words)

    def local_prior(self):
        """The corpus level as the document steps see it: E[log sigma_k(V)], alpha and
        alpha E[sigma_k(V)]."""
        weights, elog_sigma = stick_expectations(self.a, self.b)
        return HDPPrior(elog_sigma, self.alpha, self.alpha * weights)

    def topic_weights(self):
        """Corpus-level weight of each topic, E[sigma_k(V)] (sums to one over the K topics)."""
        return stick_weights(self.a, self.b)

    def token_weights(self):
        """Share of the corpus's tokens assigned to each topic: lambda - eta less the residual of
        the initial topics (token_shares)."""
        return token_shares(self.lam, self.eta, 0.0 if self.residual is None else self.residual)

    @property
    def truncation(self):
        """The corpus truncation K the model started with: n_topics, unless a continuation
        dropped the topics its merges emptied (runs.drop_emptied)."""
        return self.settings.get("truncation", self.n_topics)

    def keep_topics(self, keep):
        """Keep only the topics `keep` (ascending indices), in their stick order: lambda's columns,
        the residual, and sticks whose E[sigma_k(V)] are the kept weights renormalised (with the
        kept sticks' concentrations)."""
        keep = np.asarray(keep, dtype=np.int64)
        weights = self.topic_weights()[keep]
        self.lam = np.array(self.lam[:, keep], dtype=np.float64)
        if self.residual is not None:
            self.residual = self.residual[keep]
        self.a, self.b = sticks_for_weights(weights / weights.sum(), self.a[keep[:-1]], self.b[keep[:-1]])

    def display_order(self, show_all=True):
        """Topics by decreasing weight: all of them, or (show_all=False) only those that carry
        99% of the weight or of the tokens (`carried`)."""
        weights = self.topic_weights()
        if show_all:
            return np.argsort(-weights, kind="stable")
        return listed(weights, self.lam, self.eta, self.residual)

    def describe(self):
        """Hyperparameters, state and the effective number of topics for `info`: how many of the
        heaviest carry 95% and 99% of the stick weight, and 99% of the tokens (token_weights)."""
        weights = self.topic_weights()
        return {"topics": self.n_topics, "vocabulary": self.n_words, "alpha": self.alpha,
                "omega": self.omega, "eta": self.eta,
                "effective_topics_95": carrying(weights, 0.95),
                "effective_topics_99": carrying(weights, 0.99),
                "effective_topics_99_tokens": carrying(self.token_weights(), 0.99),
                "step": self.step, "docs_seen": self.docs_seen}

    def is_finite(self):
        """No infinite or NaN entry in lambda (checked through its column sums), a or b."""
        return self.topics_finite() and bool(np.all(np.isfinite(self.a)) and np.all(np.isfinite(self.b)))

    # ------------------------------------------------------------------ storage
    def stored(self):
        """(metadata, arrays) as written to the model file (checkpoints add to them); lambda as
        it is held (LazyTopics._stored_topics)."""
        meta = {"model": self.kind, "n_topics": self.n_topics, "n_words": self.n_words,
                "alpha": self.alpha, "omega": self.omega, "eta": self.eta, "step": self.step,
                "docs_seen": self.docs_seen, "settings": self.settings}
        known = {} if self.residual is None else {"residual": self.residual}
        return self._stored_topics(meta, {"a": self.a, "b": self.b, **known})

    @classmethod
    def from_stored(cls, meta, arrays, vocab):
        model = cls(lam=arrays["lambda"], a=arrays["a"], b=arrays["b"], alpha=meta["alpha"],
                    omega=meta["omega"], eta=meta["eta"], vocab=vocab, step=meta["step"],
                    docs_seen=meta["docs_seen"], settings=meta["settings"], residual=arrays.get("residual"))
        return model._restore_topics(meta, arrays)
