"""Sufficient statistics of a minibatch: a small value type that merges and scales.

word_topic[j, k] = sum_d sum_n c_dn phi_dnk over the tokens of word `words[j]` (the
expected topic-word counts of SVI paper eq. 35). The same type carries the work of
threads, processes or distributed workers to the global step.
"""
from dataclasses import dataclass

import numpy as np


@dataclass
class SufficientStats:
    words: np.ndarray        # int64, sorted unique global word ids
    word_topic: np.ndarray   # float64, len(words) x K
    n_docs: int
    n_tokens: float

    def merge(self, other):
        """Statistics of the union of both minibatches."""
        words = np.union1d(self.words, other.words)
        out = np.zeros((words.shape[0], self.word_topic.shape[1]))
        out[np.searchsorted(words, self.words)] += self.word_topic
        out[np.searchsorted(words, other.words)] += other.word_topic
        return SufficientStats(words, out, self.n_docs + other.n_docs, self.n_tokens + other.n_tokens)

    def scaled(self, factor):
        return SufficientStats(self.words, self.word_topic * factor, self.n_docs, self.n_tokens)
