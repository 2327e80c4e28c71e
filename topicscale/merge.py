"""`fit --merge` (HDP): after the passes and the polish, merge topics that repeat each other
while the documents the passes were scored on score the merged topics at least as high.

The HDP's truncation K bounds the topics; it is not a choice. Its stochastic passes can still
leave several topics with the same top words, each serving some of the documents, which a
reader sees as one topic listed many times. Two topics repeat each other when they share more
than half of their top REPEAT_WORDS words (coherence.repeated_pairs, the rule `info` counts).
Merging b into a gives a their counts, lambda_a + lambda_b - eta, and their weight,
E[sigma_a] + E[sigma_b] (models/hdp.sticks_for_weights); b keeps lambda = eta and a weight of
FLOOR, out of the topics that carry 99%.

The score is the passes' (the common fold-in of the exported topics, evaluate_exported) on the
documents held aside from training, or held out. A round scores every document under the topics
that carry 99%, alpha = 1/K of them, then tries the repeating pairs, most alike first (cosine
of lambda): a trial refolds the documents with E[theta] of at least TOUCH on either topic under
the round's alpha, and keeps the merge when their log likelihood does not fall. A topic merges
once a round; a pair that lost is tried again once a merge has changed one of its topics. The
rounds end when one keeps none. Hughes, Kim and Sudderth (2015) accept merges by the variational
bound; at CVB0's fractional counts that bound rises with every merge (each document holds a
little of every topic), so the held-aside documents decide, and only between topics a reader
would see as the same: merging every similar pair by them lost on held-out documents.
"""
import math
import time

import numpy as np

from .coherence import repeated_pairs
from .convergence import RowSample
from .models.hdp import MASS, carrying, sticks_for_weights

FLOOR = 1e-9            # a merged-away topic's share of the weight
TOUCH = 0.01            # E[theta] on the two topics of a document a merge refolds


def carried(weights):
    """The topics an HDP exports: the heaviest carrying MASS of the weight, heaviest first."""
    order = np.argsort(-weights, kind="stable")
    return order[:carrying(weights, MASS)]


def select_documents(csr, docs):
    """The CSR triple (indptr, indices, counts) of documents `docs` (ascending) of another."""
    indptr, indices, counts = csr
    lengths = indptr[docs + 1] - indptr[docs]
    ptr = np.zeros(docs.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=ptr[1:])
    entries = np.repeat(indptr[docs] - ptr[:-1], lengths) + np.arange(ptr[-1])
    return ptr, indices[entries], counts[entries]


class DocumentScores:
    """Each scored document's held-out log likelihood by the common fold-in (mean-field on E[beta],
    alpha = 1/K over a set of topics; evaluate.evaluate_topics), kept with its E[theta] so that a
    merge refolds only the documents that use either topic (E[theta] at least TOUCH on the two).
    The documents are read once (all of them in one block) with the lambda rows of their words."""

    def __init__(self, documents, lam):
        from .evaluate import completion_split
        from .inference.local_steps.meanfield import MeanField
        sample = isinstance(documents, RowSample)
        corpus = documents.corpus if sample else documents
        rows = documents.rows if sample else np.arange(documents.n_docs)
        self.words, self.observed, self.heldout = completion_split(corpus.rows(rows), 0)
        self.rows = np.array(lam[self.words], dtype=np.float64)          # words x K
        self.totals = np.asarray(lam, dtype=np.float64).sum(axis=0)
        self.n_docs, self.n_words = rows.shape[0], lam.shape[0]
        self.local = MeanField(100, 1e-3)

    def fold_in(self, docs, topics, column=None):
        """(log likelihood, E[theta]) of documents `docs` under `topics` with alpha = self.alpha,
        column: (topic, its rows, its total) to use in place of the kept ones."""
        from .kernels.meanfield import completion_log_likelihood
        optr, oind, ocnt = select_documents(self.observed, docs)
        hptr, hind, hcnt = select_documents(self.heldout, docs)
        words, index = np.unique(np.concatenate([oind, hind]), return_inverse=True)
        beta = self.rows[np.ix_(words, topics)] / self.totals[topics]
        if column is not None:
            k, rows, total = column
            beta[:, np.flatnonzero(topics == k)[0]] = rows[words] / total
        theta = self.local.fit(optr, index[:oind.size].astype(np.int32), ocnt, beta,
                               np.full(topics.size, self.alpha)).theta
        ll = np.empty(docs.size)
        completion_log_likelihood(hptr, index[oind.size:].astype(np.int32), hcnt, np.ascontiguousarray(theta),
                                  beta, ll)
        return ll, theta

    def score_all(self, topics):
        """Score every document under `topics` (alpha = 1/K); the per-word log likelihood."""
        self.topics, self.alpha = topics, 1.0 / topics.size
        docs = np.arange(self.n_docs)
        self.ll, theta = self.fold_in(docs, topics)
        self.theta = np.zeros((self.n_docs, self.totals.size))
        self.theta[:, topics] = theta
        return math.fsum(self.ll) / self.heldout[2].sum()

    def try_merge(self, lam, a, b, eta):
        """The change in the documents' log likelihood if b were merged into a, and what accept
        needs to apply it."""
        docs = np.flatnonzero(self.theta[:, a] + self.theta[:, b] >= TOUCH)
        topics = self.topics[self.topics != b]
        rows = self.rows[:, a] + lam[self.words, b] - eta
        total = self.totals[a] + lam[:, b].sum() - eta * self.n_words
        if not docs.size:
            return 0.0, (a, b, docs, topics, rows, total, np.empty(0), np.empty((0, topics.size)))
        ll, theta = self.fold_in(docs, topics, (a, rows, total))
        return math.fsum(ll) - math.fsum(self.ll[docs]), (a, b, docs, topics, rows, total, ll, theta)

    def accept(self, merge, eta):
        a, b, docs, topics, rows, total, ll, theta = merge
        self.rows[:, a], self.totals[a] = rows, total
        self.rows[:, b], self.totals[b] = eta, eta * self.n_words
        self.topics, self.ll[docs] = topics, ll
        self.theta[docs] = 0.0
        self.theta[np.ix_(docs, topics)] = theta


def merged_weights(weights, a, b):
    w = weights.copy()
    w[a] += w[b]
    w[b] = FLOOR
    return w / w.sum()


class Merge:
    """merge(model, seconds_left) merges an HDP model's repeating topics in place (module
    docstring) and returns {"merged", "seconds"}, with "scores" [before, after] and "scored_on"
    when it merged any. It does not poll for signals: a trial refolds a few documents, and a run
    stopped halfway would have to redo the polish before it on --resume."""

    def __init__(self, documents, scored_on):
        self.documents, self.scored_on = documents, scored_on

    def __call__(self, model, seconds_left=float("inf")):
        t0 = time.perf_counter()
        eta = float(model.eta)
        lam = np.array(model.lam, dtype=np.float64)
        weights = model.topic_weights()
        scores, before, merged, rejected = None, None, 0, set()
        while time.perf_counter() - t0 < seconds_left:
            topics = carried(weights)
            pairs = repeated_pairs(lam, topics)[:, 1:]
            if not pairs.size:
                break
            if scores is None:
                scores = DocumentScores(self.documents, lam)
            score = scores.score_all(topics)            # each round: alpha = 1/K of its topics
            before = score if before is None else before
            unit = lam / np.linalg.norm(lam, axis=0)
            similarity = (unit.T @ unit)[pairs[:, 0], pairs[:, 1]]          # cosine of the two topics
            kept, merged_now = 0, set()
            for pair in map(tuple, pairs[np.argsort(-similarity, kind="stable")].tolist()):
                if merged_now.intersection(pair) or pair in rejected:
                    continue
                if time.perf_counter() - t0 >= seconds_left:
                    break
                a, b = pair if weights[pair[0]] >= weights[pair[1]] else pair[::-1]   # the heavier keeps it
                gain, merge = scores.try_merge(lam, a, b, eta)
                if gain >= 0:
                    scores.accept(merge, eta)
                    lam[:, a] += lam[:, b] - eta
                    lam[:, b] = eta
                    weights = merged_weights(weights, a, b)
                    merged_now.update(pair)
                    rejected = {p for p in rejected if a not in p}
                    kept += 1
                else:
                    rejected.add(pair)
            merged += kept
            if not kept:
                break
        result = {"merged": merged}
        if merged:
            model.lam = lam
            model.a, model.b = sticks_for_weights(weights, model.a, model.b)
            result.update(scores=[before, scores.score_all(carried(weights))], scored_on=self.scored_on)
        result["seconds"] = time.perf_counter() - t0
        return result
