"""LDA model state: the variational Dirichlet parameters lambda of the topics (SVI paper, sec. 3.2)
and the document prior alpha. lambda is held lazily (models/topics.py, LazyTopics).
"""
import numpy as np

from .topics import DEFAULT_ETA, DEFAULT_TOPICS, LazyTopics


class LDAModel(LazyTopics):
    """lambda (V x K, word-major; LazyTopics: how it is held and stepped) with the LDA priors
    alpha and eta."""
    kind = "lda"

    def __init__(self, lam, alpha, eta, vocab, step=0, docs_seen=0, settings=None):
        self.lam = lam
        self.alpha = alpha                      # K, Dirichlet prior on topic proportions
        self.eta = eta                          # Dirichlet prior on topics
        self.vocab = vocab
        self.step = step                        # global updates done (t in rho_t)
        self.docs_seen = docs_seen
        self.settings = {} if settings is None else settings   # algorithm, schedule, local step, ...

    @classmethod
    def initial(cls, vocab, n_topics, alpha, eta, rng, settings=None):
        """lambda_kw ~ Gamma(100, 1/100): all topics near-uniform, slightly perturbed.

        This is the initialisation of Hoffman, Blei and Bach's online LDA (2010). The SVI
        paper's footnote 6 suggests lambda - eta ~ Exponential(mean D*100/(KV)); measured
        on the NYT bag of words (K=50, one pass) it reached a held-out per-word log
        likelihood of -7.43 against -7.29 for this one, and -8.04 against -7.84 on the
        State of the Union demo, so we start from near-uniform topics.
        """
        lam = rng.gamma(100.0, 0.01, size=(len(vocab), n_topics))
        return cls(lam=lam, alpha=np.full(n_topics, float(alpha)), eta=float(eta), vocab=list(vocab),
                   settings=dict(settings or {}))

    @classmethod
    def from_config(cls, vocab, config, rng):
        """A new model from fit settings: n_topics (default 100), alpha (default 1/K), eta
        (default 0.01); a learned ("auto") prior starts from its default. With start =
        "assignment" lambda is a read-only placeholder (eta everywhere, no memory) until the run
        assigns its training documents' tokens (runs._run, inference/start.py)."""
        K = config.get("n_topics") or DEFAULT_TOPICS
        alpha, eta = config.get("alpha"), config.get("eta")
        alpha = 1.0 / K if alpha in (None, "auto") else alpha
        eta = DEFAULT_ETA if eta in (None, "auto") else eta
        if config.get("start") == "assignment":
            return cls(lam=np.broadcast_to(float(eta), (len(vocab), K)), alpha=np.full(K, float(alpha)),
                       eta=float(eta), vocab=list(vocab))
        return cls.initial(vocab, K, alpha, eta, rng)

    def estep_topics(self, words=None):
        """The topics the local step uses: exp(E[log beta])."""
        return self.exp_elog_beta(words)

    def local_prior(self):
        """The document-level prior the local step uses: alpha."""
        return self.alpha

    def display_order(self, show_all=True):
        """Topics in the order `topics` lists them (LDA: all, by index)."""
        return np.arange(self.n_topics)

    def describe(self):
        """Hyperparameters and state for `info` (alpha whole when its entries differ)."""
        alpha = self.alpha.tolist() if np.ptp(self.alpha) > 0 else float(self.alpha[0])
        return {"topics": self.n_topics, "vocabulary": self.n_words, "alpha": alpha,
                "eta": self.eta, "step": self.step, "docs_seen": self.docs_seen}

    def is_finite(self):
        """No infinite or NaN entry in lambda (checked through its column sums)."""
        return self.topics_finite()

    def topic_weights(self):
        """Share of the corpus's tokens assigned to each topic: sum_w (lambda_kw - eta), normalised."""
        return self.token_weights()

    def stored(self):
        """(metadata, arrays) as written to the model file (checkpoints add to them); lambda as
        it is held (LazyTopics._stored_topics)."""
        meta = {"model": self.kind, "n_topics": self.n_topics, "n_words": self.n_words,
                "eta": self.eta, "step": self.step, "docs_seen": self.docs_seen,
                "settings": self.settings}
        return self._stored_topics(meta, {"alpha": self.alpha})

    @classmethod
    def from_stored(cls, meta, arrays, vocab):
        model = cls(lam=arrays["lambda"], alpha=arrays["alpha"], eta=meta["eta"], vocab=vocab,
                    step=meta["step"], docs_seen=meta["docs_seen"], settings=meta["settings"])
        return model._restore_topics(meta, arrays)
