"""Local step "cvb0": the clumped CVB0 document step of SCVB0 (Foulds et al. 2013, eqs. 5, 6, 9;
Algorithm 2), given fixed topics. Kernel: topicscale.kernels.cvb0.

The topics it needs are E[beta] = (N^Phi + eta) / (N^Z + V eta), word-major, which is
model.lam / colsum(model.lam) both for SCVB0 (lam = N^Phi + eta) and for mean-field models
(lam the variational Dirichlet): see `estep_topics`.
"""
import numpy as np

from ...kernels import cvb0 as kernel
from ...kernels.minibatch import distinct_words
from ...stats import SufficientStats
from .base import LocalResult
from .entries import (BLOCK_FLOATS, EntryBuffer, add_word_statistics, check_topics_rows,
                      dirichlet_prior, document_blocks, local_prior, n_chunks_for, sub_block)


class CVB0:
    """CVB0 per document: `burn_in` passes over its words, then the pass that gives the statistics.

    Settings: burn_in (1, as in sec. 4.1) and the document schedule
    rho^Theta_t = theta_s / (theta_tau + t)^theta_kappa (1, 10, 0.9; t counts the document's
    tokens). The number of passes is burn_in + 1, as in Algorithm 2.

    LocalResult: gamma = alpha + N^Theta; exp_elog_theta = exp(E[log theta]) under Dir(gamma);
    token_weight is empty (CVB0 keeps no per-token scalar); sweeps = passes per document.
    """
    name = "cvb0"

    def __init__(self, burn_in=1, theta_s=1.0, theta_tau=10.0, theta_kappa=0.9, block_floats=BLOCK_FLOATS):
        if int(burn_in) < 0:
            raise ValueError("burn_in must be >= 0")
        if not (theta_s > 0 and theta_tau >= 0 and theta_kappa >= 0):
            raise ValueError("theta_s > 0, theta_tau >= 0 and theta_kappa >= 0 are required")
        self.burn_in = int(burn_in)
        self.theta_s = float(theta_s)
        self.theta_tau = float(theta_tau)
        self.theta_kappa = float(theta_kappa)
        self.block_floats = int(block_floats)
        self._entries = EntryBuffer()
        self._steps = None                  # kernel.step_table of the document schedule, once

    def _step_table(self):
        if self._steps is None:
            self._steps = kernel.step_table(self.theta_s, self.theta_tau, self.theta_kappa)
        return self._steps

    def estep_topics(self, model, words=None):
        """E[beta] rows (V' x K) for the given words (all when None): what eq. 5 multiplies by,
        the topics this step runs on by default."""
        return model.mean_rows(words)

    def _run(self, indptr, indices, counts, topics, alpha, entry_gamma):
        D, K = indptr.shape[0] - 1, topics.shape[1]
        alpha = dirichlet_prior(alpha)
        if len(alpha) != K or entry_gamma.shape[1] != K:      # the kernel writes K topics a row
            raise ValueError(f"alpha ({len(alpha)}) and the entry buffer ({entry_gamma.shape[1]} columns) "
                             f"must have the topics' K = {K}")
        n_chunks = n_chunks_for(D)
        gamma = np.empty((D, K))
        passes = np.zeros(D, dtype=np.int64)
        chunk_thread = np.full(n_chunks, -1, dtype=np.int64)
        kernel.cvb0_batch(np.ascontiguousarray(indptr, dtype=np.int64), indices,
                          np.ascontiguousarray(counts, dtype=np.float64),
                          np.ascontiguousarray(topics, dtype=np.float64),
                          np.ascontiguousarray(alpha, dtype=np.float64), self.burn_in, self.theta_s,
                          self.theta_tau, self.theta_kappa, self._step_table(), n_chunks, gamma,
                          entry_gamma, passes, chunk_thread)
        return gamma, passes, len(np.unique(chunk_thread[chunk_thread >= 0]))

    def fit(self, indptr, indices, counts, topics, alpha):
        """CVB0 on a CSR block whose `indices` index rows of `topics` (V' x K, E[beta] rows)."""
        K = topics.shape[1]
        gamma, passes, threads = self._run(indptr, indices, counts, topics, alpha, np.empty((0, K)))
        return LocalResult(gamma, None, np.empty(0), passes, threads)

    def statistics(self, batch, model, topics, seed=None):
        """CVB0 on a minibatch (Rows) given `topics`, the rows eq. 5 multiplies by at the batch's
        sorted distinct words (E[beta] from estep_topics, or a sampled beta under SSMF), and its
        statistics sum_j m_aj gamma_aj per word (hat N^Phi without the C/|M| factor). `seed` is
        unused (CVB0 is deterministic)."""
        words, local = distinct_words(batch.indices)
        K = model.n_topics
        topics = check_topics_rows(topics, words.shape[0], K)
        prior = local_prior(model)
        word_topic = np.empty((words.shape[0], K))      # the first block overwrites it
        gammas, passes, threads = [], [], 0
        for b, (d0, d1) in enumerate(document_blocks(batch.indptr, K, self.block_floats)):
            ptr, idx, cnt = sub_block(batch.indptr, local, batch.counts, d0, d1)
            entry_gamma = self._entries.rows(idx.shape[0], K)
            g, s, t = self._run(ptr, idx, cnt, topics, prior, entry_gamma)
            add_word_statistics(idx, entry_gamma, word_topic, first_block=b == 0)
            gammas.append(g)
            passes.append(s)
            threads = max(threads, t)
        gamma = np.concatenate(gammas)
        result = LocalResult(gamma, None, np.empty(0),
                             np.concatenate(passes), threads)
        return SufficientStats(words, word_topic, batch.n_docs, batch.n_tokens), result
