"""Global step "batch": classical (batch) coordinate-ascent variational inference for LDA, the
baseline of the SVI paper (Hoffman, Blei, Wang and Paisley 2013, figure 7 and sec. 4).

One iteration of batch VB is one epoch of the driver's stream, which visits every document
exactly once per epoch: the local step runs on each minibatch with lambda held fixed, the
statistics are summed, and when the epoch's documents (corpus_docs of them) have all been seen

    lambda <- eta + sum over all documents d of sum_n c_dn phi_dn      (SVI paper, eq. 35 with S = D)

model.step counts these updates (epochs). The partial sum of an unfinished epoch is part of a
checkpoint (`checkpoint_state`), so a run resumed mid-epoch finishes the same epoch. Learned
priors (inference/priors.py) take a full Newton step (rho = 1) at the end of each epoch, alpha
from the epoch's mean E[log theta].
"""
import numpy as np

from ..local_steps.base import estep_statistics, step_metrics
from ..priors import learns, mean_log_theta, update_alpha, update_eta
from ..schedule import advance


class BatchVB:
    """Batch VB as a global step (no step size: each epoch replaces lambda)."""
    name = "batch"
    DEFAULTS = {}

    def __init__(self, model, local, corpus_docs, seed=0):
        if int(corpus_docs) < 1:
            raise ValueError("batch VB needs corpus_docs >= 1")
        self.model = model
        self.local = local
        self.corpus_docs = int(corpus_docs)
        self.seed = int(seed)
        self._sum = None
        self._docs = 0
        self._tokens = 0.0
        self._log_theta = np.zeros(model.n_topics)     # the epoch's sum of E[log theta_d] (alpha auto)

    def checkpoint_state(self):
        """The unfinished epoch's partial sums, for checkpoints."""
        m = self.model
        total = self._sum if self._sum is not None else np.zeros((m.n_words, m.n_topics))
        state = {"sum": total, "docs": np.array([self._docs]), "tokens": np.array([self._tokens])}
        if learns(m)[0]:
            state["log_theta"] = self._log_theta
        return state

    def restore_state(self, state):
        self._sum = state["sum"].copy()
        self._docs = int(state["docs"][0])
        self._tokens = float(state["tokens"][0])
        if "log_theta" in state:
            self._log_theta = state["log_theta"].copy()

    def step(self, batch):
        """Local step with the current lambda; fold the statistics into the epoch's sum and
        replace lambda once the epoch is complete. metrics["updated"] tells which happened."""
        stats, result = estep_statistics(self.local, batch, self.model)
        learn_alpha, learn_eta = learns(self.model)
        if learn_alpha:
            self._log_theta += mean_log_theta(result.gamma) * result.gamma.shape[0]
        updated = self.accumulate(stats)
        if updated and learn_alpha:
            update_alpha(self.model, self._log_theta / self.corpus_docs, 1.0)
            self._log_theta[...] = 0.0
        if updated and learn_eta:
            update_eta(self.model, 1.0)
        return {"updated": updated, "epoch_docs": self._docs if not updated else self.corpus_docs,
                **step_metrics(result)}

    def accumulate(self, stats):
        m = self.model
        if self._sum is None:
            self._sum = np.zeros((m.n_words, m.n_topics))
        self._sum[stats.words] += stats.word_topic
        self._docs += stats.n_docs
        self._tokens += stats.n_tokens
        if self._docs < self.corpus_docs:
            advance(m, stats.n_docs, updated=False)
            return False
        m.lam = m.eta + self._sum               # eq. 35 over the whole corpus: lambda replaced
        advance(m, stats.n_docs)
        self._sum[...] = 0.0
        self._docs = 0
        self._tokens = 0.0
        return True
