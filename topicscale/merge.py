"""`fit --merge` (HDP): after the passes and before the polish (and again after sweeps that were
kept, which can split a topic into two that repeat each other), merge topics that repeat each other
where the documents the passes were scored on score the merged topic no lower, or all of them
when a tenth of the topics or more repeat another.

The HDP's truncation K bounds the topics; it is not a choice. Its stochastic passes can still
leave several topics with the same top words, each serving some of the documents, which a
reader sees as one topic listed many times. Two topics repeat each other when they share more
than half of their top REPEAT_WORDS words (coherence.repeated_pairs, the rule `info` counts).
Merging b into a gives a their counts, lambda_a + lambda_b - eta, and their weight,
E[sigma_a] + E[sigma_b] (models/hdp.sticks_for_weights); b keeps lambda = eta and a weight of
FLOOR, out of the topics that carry 99% (of the weight or of the tokens, models/hdp.listed).

The score is the passes' (the common fold-in of the exported topics, evaluate_exported) on
their documents: held aside from training, --heldout's, or on a corpus too small to spare any,
a sample of the training documents. A round scores every document under the topics that carry
99%, alpha = 1/K of them, then tries the repeating pairs, most alike first (cosine of lambda): a
trial refolds the documents with E[theta] of at least TOUCH on either topic under the round's
alpha, and keeps the merge when their log likelihood does not fall (when no scored document
uses either topic, the documents cannot tell them apart and they merge). A topic merges once a
round; a pair that lost is tried again once a merge has changed one of its topics. The rounds
end when one keeps none; if the merged topics then score lower in all, the model is left as
it was. Hughes, Kim and Sudderth (2015) accept merges by the variational bound; at CVB0's
fractional counts that bound rises with every merge (each document holds a little of every
topic), so the scored documents decide, and only between topics a reader would see as the
same: merging every similar pair by them lost on held-out documents. When a tenth of the
listed topics or more repeat another (coherence.MANY_REPEATS, the share at which the polish
gives up an LDA's passes), every repeating pair merges whatever it scores, until none repeats:
a reader sees those topics as one listed many times.
"""
import time

import numpy as np

from .coherence import listed_repeats, many_repeat, repeated_pairs
from .convergence import RowSample
from .models.hdp import listed, sticks_for_weights
from .polish import within_half_of_memory

FLOOR = 1e-9            # a merged-away topic's share of the weight
TOUCH = 0.01            # E[theta] on the two topics of a document a merge refolds
SPLIT_SEED = 0          # evaluate's default split, as the passes' scores use


def select_documents(csr, docs):
    """The CSR triple (indptr, indices, counts) of documents `docs` (ascending) of another."""
    indptr, indices, counts = csr
    lengths = indptr[docs + 1] - indptr[docs]
    ptr = np.zeros(docs.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=ptr[1:])
    entries = np.repeat(indptr[docs] - ptr[:-1], lengths) + np.arange(ptr[-1])
    return ptr, indices[entries], counts[entries]


def cosines(lam, pairs):
    """The cosine of lambda's two columns of each pair (rows of `pairs`), from the Gram matrix of
    the topics the pairs name."""
    named, index = np.unique(pairs, return_inverse=True)
    gram = lam[:, named].T @ lam[:, named]
    norms = np.sqrt(np.diag(gram))
    index = index.reshape(pairs.shape)
    return gram[index[:, 0], index[:, 1]] / (norms[index[:, 0]] * norms[index[:, 1]])


class DocumentScores:
    """Each scored document's held-out log likelihood by the common fold-in (mean-field on E[beta],
    alpha = 1/K over a set of topics; evaluate.evaluate_topics), kept with its E[theta] so that a
    merge refolds only the documents that use either topic (E[theta] at least TOUCH on the two).
    The documents with held-out words are read once with the lambda rows (words x K) and column
    sums of the words they hold."""

    def __init__(self, documents, lam):
        from .evaluate import COMMON_MAX_ITER, COMMON_TOL, completion_split
        from .inference.local_steps.meanfield import MeanField
        sample = isinstance(documents, RowSample)
        corpus = documents.corpus if sample else documents
        rows = documents.rows if sample else np.arange(documents.n_docs)
        self.words, observed, heldout = completion_split(corpus.rows(rows), SPLIT_SEED)
        scored = np.flatnonzero(np.diff(heldout[0]))              # a document of one word has none
        self.observed, self.heldout = select_documents(observed, scored), select_documents(heldout, scored)
        self.tokens = float(self.heldout[2].sum())
        self.rows = np.array(lam[self.words], dtype=np.float64)
        self.totals = np.asarray(lam).sum(axis=0, dtype=np.float64)
        self.n_docs, self.n_words = scored.size, lam.shape[0]
        self.local = MeanField(COMMON_MAX_ITER, COMMON_TOL)

    def fold_in(self, docs, topics, column=None):
        """(log likelihood, E[theta]) of documents `docs` under `topics` with alpha = self.alpha;
        column: (topic, its rows, its total) in place of the kept ones."""
        from .evaluate import complete_documents
        optr, oind, ocnt = select_documents(self.observed, docs)
        hptr, hind, hcnt = select_documents(self.heldout, docs)
        words, index = np.unique(np.concatenate([oind, hind]), return_inverse=True)
        index = index.astype(np.int32)
        beta = self.rows[np.ix_(words, topics)] / self.totals[topics]
        if column is not None:
            k, rows, total = column
            beta[:, np.flatnonzero(topics == k)[0]] = rows[words] / total
        ll, result = complete_documents((optr, index[:oind.size], ocnt), (hptr, index[oind.size:], hcnt),
                                        self.local, beta, beta, np.full(topics.size, self.alpha))
        return ll, result.theta

    def score_all(self, topics):
        """Score every document under `topics` (alpha = 1/K); the per-word log likelihood."""
        self.topics, self.alpha = topics, 1.0 / topics.size
        self.ll, theta = self.fold_in(np.arange(self.n_docs), topics)
        self.theta = np.zeros((self.n_docs, self.totals.size))
        self.theta[:, topics] = theta
        return float(np.sum(self.ll)) / self.tokens

    def try_merge(self, a, b, eta):
        """(the change in the log likelihood of the documents that use a or b if b were merged into
        a, what accept needs to keep it)."""
        docs = np.flatnonzero(self.theta[:, a] + self.theta[:, b] >= TOUCH)
        topics = self.topics[self.topics != b]
        rows = self.rows[:, a] + self.rows[:, b] - eta
        total = self.totals[a] + self.totals[b] - eta * self.n_words
        if not docs.size:
            return 0.0, (a, b, docs, topics, rows, total, np.empty(0), np.empty((0, topics.size)))
        ll, theta = self.fold_in(docs, topics, (a, rows, total))
        return float(np.sum(ll) - np.sum(self.ll[docs])), (a, b, docs, topics, rows, total, ll, theta)

    def accept(self, merge, eta):
        a, b, docs, topics, rows, total, ll, theta = merge
        self.rows[:, a], self.totals[a] = rows, total
        self.rows[:, b], self.totals[b] = eta, eta * self.n_words
        self.topics, self.ll[docs] = topics, ll
        self.theta[docs] = 0.0
        self.theta[np.ix_(docs, topics)] = theta


def merged_weights(weights, a, b):
    w = weights.copy()
    w[a] += w[b] - FLOOR
    w[b] = FLOOR
    return w


class Merge:
    """merge(model, seconds_left, stop_requested) merges an HDP model's repeating topics in place
    (module docstring) and returns {"merged", "seconds"}; with "scores" [before, after] and
    "scored_on" when it scored any, "undone" when the merged topics scored lower in all, or
    "skipped" (why none was tried). stop_requested() is polled between trials: a signal ends the
    merging early, keeping the merges made."""

    def __init__(self, documents, scored_on):
        self.documents, self.scored_on = documents, scored_on

    def __call__(self, model, seconds_left=float("inf"), stop_requested=lambda: False):
        t0 = time.perf_counter()
        out_of_time = lambda: time.perf_counter() - t0 >= seconds_left or stop_requested()
        weights = model.topic_weights()
        repeating, listed_now = listed_repeats(model)
        if not repeating:
            return {"merged": 0, "seconds": time.perf_counter() - t0}
        every_repeat = many_repeat(repeating, listed_now)
        if not within_half_of_memory(model.n_words * model.n_topics * 8):   # a float64 copy
            return {"merged": 0, "seconds": 0.0, "skipped": "its numbers would not fit in memory"}
        eta = float(model.eta)
        lam = np.array(model.lam, dtype=np.float64)
        residual = None if model.residual is None else model.residual.copy()
        shown = lambda: listed(weights, lam, eta, residual)
        scores = DocumentScores(self.documents, lam)
        merged, rejected, before, after = 0, set(), None, None
        while not out_of_time():
            topics = shown()
            pairs = repeated_pairs(lam, topics)[:, 1:]
            if not pairs.size:
                break
            after = scores.score_all(topics)            # each round: alpha = 1/K of its topics
            before = after if before is None else before
            kept, merged_now = 0, set()
            for pair in map(tuple, pairs[np.argsort(-cosines(lam, pairs), kind="stable")].tolist()):
                if merged_now.intersection(pair) or pair in rejected:
                    continue
                if out_of_time():
                    break
                a, b = pair if weights[pair[0]] >= weights[pair[1]] else pair[::-1]   # the heavier keeps it
                gain, merge = scores.try_merge(a, b, eta)
                if gain < 0 and not every_repeat:
                    rejected.add(pair)
                    continue
                scores.accept(merge, eta)
                lam[:, a] += lam[:, b] - eta
                lam[:, b] = eta
                if residual is not None:
                    residual[a] += residual[b]
                    residual[b] = 0.0
                weights = merged_weights(weights, a, b)
                merged_now.update(pair)
                rejected = {p for p in rejected if a not in p}
                kept += 1
            merged += kept
            if not kept:
                break
            after = None                                # the round's score is no longer the model's
        result = {"merged": merged, "every_repeat": every_repeat}
        if before is not None:
            after = scores.score_all(shown()) if after is None else after
            result.update(scores=[before, after], scored_on=self.scored_on)
            if after < before and not every_repeat:
                result.update(merged=0, undone=merged)
            elif merged:
                model.lam, model.residual = lam, residual
                model.a, model.b = sticks_for_weights(weights, model.a, model.b)
        result["seconds"] = time.perf_counter() - t0
        return result
