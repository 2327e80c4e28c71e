"""Global step "svi": stochastic variational inference for LDA (SVI paper, Hoffman, Blei, Wang
and Paisley 2013, figure 6, steps 10-11; eq. 27 in LDAModel.update_topics)."""
import numpy as np

from ...kernels.topic_matrix import add_rows_summed, affine_step_summed
from ..local_steps.base import estep_statistics, one_word_batch, step_metrics
from ..priors import update_priors, warm_up_priors
from ..schedule import advance, robbins_monro


class SVI:
    """lambda <- (1 - rho_t) lambda + rho_t (eta + D/|S| sum_{d in S} sum_n c_dn phi_dn)."""
    name = "svi"

    def __init__(self, model, local, corpus_docs, tau=1.0, kappa=0.9):
        self.model = model
        self.local = local
        self.corpus_docs = corpus_docs
        self.tau = tau
        self.kappa = kappa

    def step(self, batch):
        """One minibatch: local step on its default topics, then the global natural-gradient step.
        Returns metrics."""
        stats, result = estep_statistics(self.local, batch, self.model)
        self.update(stats)
        update_priors(self.model, result, self.last_rho)
        return {"rho": self.last_rho, **step_metrics(result)}

    def warm_up(self, batch=None):
        """Load (or compile) the local step's kernels, by its `statistics` on a minibatch of one
        token (`batch`, default one_word_batch(); a distributed run's runs on every worker) and
        its default topics, the update's and the eta step's (see train: not counted as training
        time); leaves the model untouched."""
        estep_statistics(self.local, one_word_batch() if batch is None else batch, self.model)
        warm_up_update(self.model.n_topics)
        warm_up_priors(self.model)

    def update(self, stats):
        m = self.model
        rho = robbins_monro(m.step, self.tau, self.kappa)
        m.update_topics(rho, stats.words, rho * self.corpus_docs / stats.n_docs, stats.word_topic)
        advance(m, stats.n_docs)
        self.last_rho = rho


def warm_up_update(K):
    """Load the kernels of the lazy topic update (models/topics.py) for K topics."""
    none, no_stats = np.zeros(0, dtype=np.int64), np.zeros((0, K))
    affine_step_summed(np.ones((1, K)), 1.0, 0.0, none, 0.0, no_stats)      # the settling step
    add_rows_summed(np.ones((1, K)), none, 0.0, no_stats)                    # the lazy step
