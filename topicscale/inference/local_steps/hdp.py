"""Local step "hdp": the online HDP's document step (SVI paper, sec. 3.3, figure 9, steps 4-10):
coordinate ascent on each document's (zeta, phi, gamma) over T document slots (two-level stick
breaking, truncations K and T), numba kernel kernels/hdp.py. Its statistics, HDPStats
(topicscale/stats.py), also count each document's expected occupied slots per topic, which the
global step (global_steps/hdp.py) gives the corpus sticks.
"""
from dataclasses import dataclass

import numba
import numpy as np

from ...kernels import hdp as kernel
from ...kernels.minibatch import distinct_words, word_major
from ...stats import HDPStats
from .entries import check_topics_rows


@dataclass
class HDPResult:
    theta: np.ndarray            # D x K, E[theta_d] over the corpus topics (rows sum to one)
    sweeps: np.ndarray           # D, sweeps of the document loop
    threads_used: int
    zeta: np.ndarray = None      # D x T x K (statistics only)
    phi: np.ndarray = None       # nnz x T (statistics only)
    tables: np.ndarray = None    # D x K, m_dk = sum_i P(slot i occupied) zeta_dik (statistics only)


class HDPLocal:
    """The HDP document step: coordinate ascent on (zeta, phi, gamma) of each document with
    the topics and corpus sticks fixed, numba kernel parallel over documents.

    doc_truncation is T; the loop stops when the mean absolute change of the document's
    expected topic counts (over the K corpus topics) is below tol, or after max_iter sweeps.
    """
    name = "hdp"

    def __init__(self, max_iter=100, tol=1e-3, doc_truncation=15):
        self.max_iter = int(max_iter)
        self.tol = float(tol)
        self.doc_truncation = int(doc_truncation)
        if self.doc_truncation < 1:
            raise ValueError("doc_truncation must be at least 1")

    def fit(self, indptr, indices, counts, topics, prior, keep=False):
        """Run the kernel on a CSR block whose `indices` index rows of `topics` = E[log beta]
        (V' x K); prior is an HDPPrior (E[log sigma_k(V)], alpha). keep=True also returns
        every document's zeta, phi and expected occupied slots per topic (`tables`)."""
        D, K = indptr.shape[0] - 1, topics.shape[1]
        T = self.doc_truncation
        n_chunks = max(1, min(D, 4 * numba.get_num_threads()))
        counts = np.asarray(counts, dtype=np.float64)
        theta = np.empty((D, K))
        sweeps = np.zeros(D, dtype=np.int64)
        chunk_thread = np.full(n_chunks, -1, dtype=np.int64)
        zeta = np.empty((D, T, K) if keep else (1, T, K))
        phi = np.empty((indices.shape[0], T) if keep else (1, T))
        tables = np.empty((D, K) if keep else (1, K))
        kernel.estep_batch(indptr, indices, counts, np.ascontiguousarray(topics, dtype=np.float64),
                           np.ascontiguousarray(prior.elog_sigma, dtype=np.float64), float(prior.alpha),
                           T, self.max_iter, self.tol, n_chunks, keep, theta, zeta, phi, tables, sweeps,
                           chunk_thread)
        result = HDPResult(theta, sweeps, len(np.unique(chunk_thread[chunk_thread >= 0])))
        if keep:
            result.zeta, result.phi, result.tables = zeta, phi, tables
        return result

    def estep_topics(self, model, words=None):
        """The topics the document step runs on: E[log beta] rows (V' x K) of the given words
        (all when None), the model's estep_topics."""
        return model.estep_topics(words)

    def statistics(self, batch, model, topics, seed=None):
        """Document step on a minibatch (Rows) given `topics`, the E[log beta] rows of its sorted
        distinct words (estep_topics), and its sufficient statistics for HDPSVI (fig. 9, step
        11). `seed` is unused (the step is deterministic)."""
        words, local = distinct_words(batch.indices)
        topics = check_topics_rows(topics, words.shape[0], model.n_topics)
        result = self.fit(batch.indptr, local, batch.counts, topics, model.local_prior(), keep=True)
        word_ptr, order, doc = word_major(batch.indptr, local, words.shape[0])
        word_topic = np.empty((words.shape[0], model.n_topics))
        kernel.word_topic_statistics(word_ptr, order, doc,
                                     np.asarray(batch.counts, dtype=np.float64), result.phi,
                                     result.zeta, word_topic)
        stats = HDPStats(words, word_topic, batch.n_docs, batch.n_tokens,
                         result.tables.sum(axis=0))
        result.zeta = result.phi = result.tables = None          # not kept past the step
        return stats, result
