"""What every local step shares: the contract below, LocalResult (the result of the LDA document
steps: mean-field, CVB0, Gibbs), step_metrics, one_word_batch, and how a global step reaches a
minibatch (estep_statistics, minibatch_statistics, minibatch_words, on_documents: in its chunks,
in this process or on dask workers, inference/chunks.py).

A local step fits each document's variational parameters given the global topics (SSMF paper,
sec. 2.5: any E-step pairs with any global step). The contract every local step keeps:

    estep_topics(model, words=None) -> rows (V' x K)
        the topic rows the step runs on by default for `model`, at `words` (all when None), in
        the representation its statistics take;
    statistics(batch, model, topics, seed=None) -> (stats, result)
        the step on a minibatch (Rows) given `topics`, one row per distinct word of the batch in
        ascending order (kernels.minibatch.distinct_words); `model` gives only the document prior
        and K. seed: the minibatch's seed for a step that samples (Gibbs); the others ignore it.

The topics are explicit because the global step decides them: SVI, SCVB0 and batch VB take the
step's own (`estep_statistics`), SSMF and SSMF-A a sample of beta from q (SSMF paper, Algorithms
1 and 2, step 6), whatever the step's own choice would be.
"""
from dataclasses import dataclass

import numpy as np

from ...corpus.shards import Rows
from ...kernels.minibatch import distinct_words
from .entries import exp_dirichlet_expectations


@dataclass
class LocalResult:
    gamma: np.ndarray            # D x K variational Dirichlet of each document
    given_exp_elog_theta: np.ndarray    # D x K, or None: computed from gamma when first asked
    token_weight: np.ndarray     # nnz, c_n / norm_n
    sweeps: np.ndarray           # D, sweeps of the document loop
    threads_used: int
    redone: np.ndarray = None    # D bools: refused in single precision, redone in double

    @property
    def exp_elog_theta(self):
        """exp(E[log theta_d]) under Dir(gamma_d), D x K (local steps other than mean-field do not
        need it for their statistics, so it is computed only when asked for)."""
        if self.given_exp_elog_theta is None:
            self.given_exp_elog_theta = exp_dirichlet_expectations(self.gamma)
        return self.given_exp_elog_theta

    @property
    def theta(self):
        """E[theta_d] = gamma_d / sum_k gamma_dk."""
        return self.gamma / self.gamma.sum(axis=1, keepdims=True)


def step_metrics(result):
    """A local step's minibatch metrics: mean sweeps, threads, documents redone in double."""
    out = {"sweeps": float(result.sweeps.mean()) if result.sweeps.size else 0.0,
           "threads_used": result.threads_used}
    redone = getattr(result, "redone", None)
    if redone is not None:
        out["double_docs"] = int(redone.sum())
    return out


def minibatch_words(batch):
    """The ascending distinct word ids (int64) of a minibatch: its own `words` when it keeps them
    (inference/chunks.Minibatch, or a distributed minibatch, whose workers sent them), else those
    of its documents (Rows)."""
    words = getattr(batch, "words", None)
    return words if words is not None else distinct_words(batch.indices)[0]


def minibatch_statistics(local, batch, model, topics, seed=None):
    """`local` on a minibatch given `topics`, the rows of its distinct words (minibatch_words):
    (stats, result), in the minibatch's chunks wherever they run (inference/chunks.py); a plain
    Rows is cut by the default rule. A step that samples gets its seed for the minibatch here
    (its `minibatch_seed` of the model when none is given), so chunks need no model step."""
    from ..chunks import Minibatch
    if seed is None and hasattr(local, "minibatch_seed"):
        seed = local.minibatch_seed(model)
    if not hasattr(batch, "statistics"):
        batch = Minibatch(batch)
    return batch.statistics(local, model, topics, seed=seed)


def on_documents(batch, fn, *args):
    """fn(the minibatch's documents as Rows, *args), run where the documents are (on a worker for
    a distributed minibatch: the client does not read documents)."""
    return batch.apply(fn, *args) if hasattr(batch, "apply") else fn(batch, *args)


def estep_statistics(local, batch, model):
    """`local`'s statistics on the topics it runs on by default for `model` (its estep_topics at
    the minibatch's words): the local step of every global step but SSMF and SSMF-A."""
    return minibatch_statistics(local, batch, model, local.estep_topics(model, minibatch_words(batch)))


def one_word_batch():
    """A minibatch of one document holding one token of word 0, with the dtypes of real shards
    (so it loads the same kernel specialisations), for warming up kernels."""
    return Rows(np.zeros(1, dtype=np.int64), np.array([0, 1], dtype=np.int64),
                np.zeros(1, dtype=np.int32), np.ones(1))
