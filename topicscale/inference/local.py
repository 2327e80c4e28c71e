"""Local steps: fit each document's variational parameters given the global topics."""
from dataclasses import dataclass

import numba
import numpy as np

from ..corpus.shards import Rows
from ..kernels import meanfield
from ..kernels.minibatch import distinct_words, word_major
from ..stats import SufficientStats


@dataclass
class LocalResult:
    gamma: np.ndarray            # D x K variational Dirichlet of each document
    exp_elog_theta: np.ndarray   # D x K
    token_weight: np.ndarray     # nnz, c_n / norm_n
    sweeps: np.ndarray           # D, sweeps of the document loop
    threads_used: int

    @property
    def theta(self):
        """E[theta_d] = gamma_d / sum_k gamma_dk."""
        return self.gamma / self.gamma.sum(axis=1, keepdims=True)


def one_word_batch():
    """A minibatch of one document holding one token of word 0, with the dtypes of real shards
    (so it loads the same kernel specialisations), for warming up kernels."""
    return Rows(np.zeros(1, dtype=np.int64), np.array([0, 1], dtype=np.int64),
                np.zeros(1, dtype=np.int32), np.ones(1))


class MeanField:
    """Mean-field E-step of LDA (SVI paper eqs. 33-34), numba kernel parallel over documents."""
    name = "meanfield"

    def __init__(self, max_iter=100, tol=1e-3, accelerate=False):
        self.max_iter = int(max_iter)
        self.tol = float(tol)
        self.accelerate = bool(accelerate)

    def fit(self, indptr, indices, counts, topics, alpha):
        """Run the kernel on a CSR block whose `indices` index rows of `topics` (V' x K)."""
        D, K = indptr.shape[0] - 1, topics.shape[1]
        n_chunks = max(1, min(D, 4 * numba.get_num_threads()))
        gamma = np.empty((D, K))
        exp_elog_theta = np.empty((D, K))
        token_weight = np.empty(indices.shape[0])
        sweeps = np.zeros(D, dtype=np.int64)
        chunk_thread = np.full(n_chunks, -1, dtype=np.int64)
        meanfield.estep_batch(indptr, indices, counts, topics, np.asarray(alpha, dtype=np.float64),
                              self.max_iter, self.tol, self.accelerate, n_chunks, gamma, exp_elog_theta,
                              token_weight, sweeps, chunk_thread)
        return LocalResult(gamma, exp_elog_theta, token_weight, sweeps,
                           len(np.unique(chunk_thread[chunk_thread >= 0])))

    def warm_up(self, model):
        """Load (or compile) the kernels `statistics` calls; leaves the model untouched. The
        driver calls it before it starts timing the minibatches."""
        self.statistics(one_word_batch(), model)

    def statistics(self, batch, model):
        """E-step on a minibatch (Rows) and its sufficient statistics for the global step."""
        words, local = distinct_words(batch.indices)
        exp_elog_beta = model.estep_topics(words)
        result = self.fit(batch.indptr, local, batch.counts, exp_elog_beta, model.local_prior())
        word_ptr, order, doc = word_major(batch.indptr, local, words.shape[0])
        word_topic = np.empty((words.shape[0], model.n_topics))
        meanfield.word_topic_statistics(word_ptr, doc, result.token_weight[order],
                                        result.exp_elog_theta, word_topic)
        word_topic *= exp_elog_beta
        stats = SufficientStats(words, word_topic, batch.n_docs, batch.n_tokens)
        return stats, result


