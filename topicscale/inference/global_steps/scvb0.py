"""Global step "scvb0": stochastic CVB0 (Foulds, Boyles, DuBois, Smyth and Welling 2013,
Algorithm 2, eqs. 7-8), the online-EM update of the CVB0 statistics.

    N^Phi <- (1 - rho^Phi_t) N^Phi + rho^Phi_t (C/|M|) hat N^Phi                         (eq. 7)
    N^Z   <- (1 - rho^Phi_t) N^Z   + rho^Phi_t (C/|M|) hat N^Z                           (eq. 8)
    rho^Phi_t = s / (tau + t)^kappa       (sec. 4.1: s = 10, tau = 1000, kappa = 0.9)

with hat N^Phi the minibatch's word-topic statistics from the local step (any local step;
CVB0 by default), |M| the minibatch's tokens and C the corpus's tokens.

State: model.lam = N^Phi + eta (V x K), so N^Z + V eta = colsum(lam), E[beta] = lam / colsum
= (N^Phi + eta) / (N^Z + V eta) and save/load/eval/topics/export work unchanged. Since
hat N^Z = colsum(hat N^Phi), eq. 8 holds by itself once eq. 7 is applied to lam - eta:

    lam <- (1 - rho) lam + rho eta + rho (C/|M|) hat N^Phi   (on the minibatch's rows)

t is model.step, the number of minibatches already folded in (the paper counts "document
iterations"; with a fixed minibatch size the two differ by a constant factor in t, which the
paper's tau = 1000 was tuned for with minibatches of 100). rho is capped at 1.
"""
from ..local_steps.base import estep_statistics, step_metrics
from ..priors import update_priors
from ..schedule import advance
from .svi import SVI



def scvb0_step_size(t, s, tau, kappa):
    """rho^Phi_t = min(1, s / (tau + t)^kappa)."""
    return min(1.0, s / (tau + t) ** kappa)


class SCVB0:
    """Online-EM global step of SCVB0 over the statistics of any local step.

    corpus_tokens: C, the training corpus's token count. The caller should pass it
    (Corpus.n_tokens); without it C is estimated as corpus_docs * (tokens / documents of the
    minibatches seen so far by this object).
    """
    name = "scvb0"
    DEFAULTS = {"alpha": 0.1, "eta": 0.01, "batch_size": 100, "tau": 1000.0, "kappa": 0.9, "s": 10.0}

    def __init__(self, model, local, corpus_docs, tau=1000.0, kappa=0.9, s=10.0, corpus_tokens=None,
                 seed=0):
        if not (s > 0 and tau >= 0 and 0 < kappa <= 1):
            raise ValueError("scvb0 needs s > 0, tau >= 0 and 0 < kappa <= 1")
        self.model = model
        self.local = local
        self.corpus_docs = int(corpus_docs)
        self.corpus_tokens = None if corpus_tokens is None else float(corpus_tokens)
        self.tau = float(tau)
        self.kappa = float(kappa)
        self.s = float(s)
        self.seed = int(seed)
        self._docs = 0
        self._tokens = 0.0
        self.last_rho = None

    def corpus_size(self):
        """C: the given corpus token count, or its running estimate."""
        if self.corpus_tokens is not None:
            return self.corpus_tokens
        return self.corpus_docs * self._tokens / max(self._docs, 1)

    def step(self, batch):
        """One minibatch: local step, then eqs. 7-8. Returns metrics."""
        stats, result = estep_statistics(self.local, batch, self.model)
        self.update(stats)
        update_priors(self.model, result, self.last_rho)
        return {"rho": self.last_rho, "corpus_tokens": self.corpus_size(), **step_metrics(result)}

    warm_up = SVI.warm_up           # load the kernels before the timed run (train)

    def update(self, stats):
        m = self.model
        self._docs += stats.n_docs
        self._tokens += stats.n_tokens
        rho = scvb0_step_size(m.step, self.s, self.tau, self.kappa)
        scale = rho * self.corpus_size() / stats.n_tokens if stats.n_tokens > 0 else 0.0
        m.update_topics(rho, stats.words, scale, stats.word_topic)
        advance(m, stats.n_docs)
        self.last_rho = rho
