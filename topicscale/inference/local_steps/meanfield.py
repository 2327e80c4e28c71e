"""Local step "meanfield": the mean-field E-step of LDA (SVI paper, Hoffman, Blei, Wang and
Paisley 2013, eqs. 33-34, with the statistics of eq. 35's sum), numba kernel kernels/meanfield.py.
"""
import numba
import numpy as np

from ...kernels import meanfield
from ...kernels.minibatch import distinct_words, word_major
from ...stats import SufficientStats
from .base import LocalResult
from .entries import check_topics_rows, dirichlet_prior


class MeanField:
    """Mean-field E-step of LDA (SVI paper eqs. 33-34), numba kernel parallel over documents.

    precision: "single" runs the training E-step (statistics) on float32 copies of the topic
    rows, with exp(E[log theta]) computed in float32 too (special.exp_dirichlet_lanes); a
    document whose normalisers fall near float32's range is redone in float64
    (kernels.meanfield.SAFE_NORM_SINGLE; the double kernel is compiled or loaded at the first
    such document). gamma and the statistics are accumulated in float64, and `fit` without
    single_topics (evaluation, infer) runs in double.

    estep_beta: the topics B of eq. 33. "exp-elog" is the paper's exp(E[log beta]); "mean" is
    E[beta] = lambda / colsum(lambda), the plug-in of CVB0 (SCVB0 paper, eq. 5). exp(E[log beta])
    is about E[beta] with half a count taken from every lambda_kw (psi(x) ~ log(x - 1/2)), which
    all but removes rare words from their topics; Asuncion et al. (2009, cited by the SCVB0 paper,
    sec. 4.1) trace VB's worse held-out scores to this. With "mean" the E-step and the held-out
    fold-in multiply by the same topics; the global step is unchanged. estep_beta chooses only
    the default topics (estep_topics): under SSMF and SSMF-A the step runs on the sampled beta.
    """
    name = "meanfield"
    PRECISIONS = ("single", "double")
    ESTEP_BETAS = ("exp-elog", "mean")

    def __init__(self, max_iter=100, tol=1e-3, accelerate=False, precision="single", estep_beta="exp-elog"):
        if precision not in self.PRECISIONS:
            raise ValueError(f"precision must be one of {self.PRECISIONS}, not {precision!r}")
        if estep_beta not in self.ESTEP_BETAS:
            raise ValueError(f"estep_beta must be one of {self.ESTEP_BETAS}, not {estep_beta!r}")
        self.max_iter = int(max_iter)
        self.tol = float(tol)
        self.accelerate = bool(accelerate)
        self.precision = precision
        self.estep_beta = estep_beta

    def estep_topics(self, model, words=None):
        """The topic rows B of eq. 33 (V' x K) for the given words (all when None) that this step
        runs on by default: the model's own (exp(E[log beta]) for LDA) or, with
        estep_beta="mean", E[beta]."""
        if self.estep_beta == "mean":
            return model.mean_rows(words)
        return model.estep_topics(words)

    def fit(self, indptr, indices, counts, topics, alpha, single_topics=None):
        """Run the kernel on a CSR block whose `indices` index rows of `topics` (V' x K, float64);
        with single_topics (the same rows in float32), in single precision (see the class)."""
        D, K = indptr.shape[0] - 1, topics.shape[1]
        alpha = dirichlet_prior(alpha)
        topics = np.ascontiguousarray(topics)            # the kernels read rows as contiguous blocks
        if single_topics is not None:
            single_topics = np.ascontiguousarray(single_topics)
        n_chunks = max(1, min(D, 4 * numba.get_num_threads()))
        gamma = np.empty((D, K))
        exp_elog_theta = np.empty((D, K))
        token_weight = np.empty(indices.shape[0])
        sweeps = np.zeros(D, dtype=np.int64)
        chunk_thread = np.full(n_chunks, -1, dtype=np.int64)
        single = single_topics is not None
        meanfield.estep_batch(indptr, indices, counts, single_topics if single else topics, alpha,
                              self.max_iter, self.tol, self.accelerate,
                              meanfield.SAFE_NORM_SINGLE if single else 0.0, n_chunks,
                              gamma, exp_elog_theta, token_weight, sweeps, chunk_thread)
        threads = len(np.unique(chunk_thread[chunk_thread >= 0]))
        redone = sweeps == meanfield.REFUSED
        if redone.any():
            # documents whose normalisers left float32's safe range: the same E-step in double
            docs = np.flatnonzero(redone)
            spans = [slice(indptr[d], indptr[d + 1]) for d in docs]
            sub_ptr = np.concatenate([[0], np.cumsum([s.stop - s.start for s in spans])])
            sub = self.fit(sub_ptr, np.concatenate([indices[s] for s in spans]),
                           np.concatenate([counts[s] for s in spans]), topics, alpha)
            gamma[docs], exp_elog_theta[docs], sweeps[docs] = sub.gamma, sub.exp_elog_theta, sub.sweeps
            for j, s in enumerate(spans):
                token_weight[s] = sub.token_weight[sub_ptr[j]:sub_ptr[j + 1]]
        return LocalResult(gamma, exp_elog_theta, token_weight, sweeps, threads, redone)

    def statistics(self, batch, model, topics, seed=None):
        """E-step (eqs. 33-34) on a minibatch (Rows) given the topics B of eq. 33 at its sorted
        distinct words (estep_topics, or a sampled beta under SSMF), and its sufficient
        statistics sum_d c_dn phi_dn per word (eq. 35's sum) for the global step. `seed` is
        unused (the step is deterministic)."""
        words, local = distinct_words(batch.indices)
        topics = check_topics_rows(topics, words.shape[0], model.n_topics)
        single = topics.astype(np.float32) if self.precision == "single" else None
        result = self.fit(batch.indptr, local, batch.counts, topics, model.local_prior(), single)
        word_ptr, order, doc = word_major(batch.indptr, local, words.shape[0])
        word_topic = np.empty((words.shape[0], model.n_topics))
        meanfield.word_topic_statistics(word_ptr, doc, result.token_weight[order],
                                        result.exp_elog_theta, word_topic)
        word_topic *= topics
        stats = SufficientStats(words, word_topic, batch.n_docs, batch.n_tokens)
        return stats, result


