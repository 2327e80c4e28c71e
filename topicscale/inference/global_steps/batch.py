"""Global step "batch": classical (batch) coordinate-ascent variational inference for LDA, the
baseline of the SVI paper (Hoffman, Blei, Wang and Paisley 2013, figure 7 and sec. 4).

One iteration of batch VB is one epoch of the driver's stream, which visits every document
exactly once per epoch: the local step runs on each minibatch with lambda held fixed, the
statistics are summed, and when the epoch's documents (corpus_docs of them) have all been seen

    lambda <- eta + sum over all documents d of sum_n c_dn phi_dn      (SVI paper, eq. 35 with S = D)

model.step counts these updates (epochs). The partial sum of an unfinished epoch is part of a
checkpoint (`checkpoint_state`), so a run resumed mid-epoch finishes the same epoch.
"""
import numpy as np

from ..local_steps.base import estep_statistics, step_metrics
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

    def checkpoint_state(self):
        """The unfinished epoch's partial sum, for checkpoints."""
        m = self.model
        total = self._sum if self._sum is not None else np.zeros((m.n_words, m.n_topics))
        return {"sum": total, "docs": np.array([self._docs]), "tokens": np.array([self._tokens])}

    def restore_state(self, state):
        self._sum = state["sum"].copy()
        self._docs = int(state["docs"][0])
        self._tokens = float(state["tokens"][0])

    def step(self, batch):
        """Local step with the current lambda; fold the statistics into the epoch's sum and
        replace lambda once the epoch is complete. metrics["updated"] tells which happened."""
        stats, result = estep_statistics(self.local, batch, self.model)
        updated = self.accumulate(stats)
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
