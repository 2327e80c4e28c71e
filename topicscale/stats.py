"""Sufficient statistics of a minibatch: small value types that merge and scale, what a local step
hands its global step.

SufficientStats (LDA): word_topic[j, k] = sum_d sum_n c_dn phi_dnk over the tokens of word
`words[j]` (the expected topic-word counts of SVI paper eq. 35). HDPStats adds the corpus
sticks' table counts (SVI paper, figure 9, step 11), CTMStats the logistic-normal moments of the
CTM's M-step (Wang and Blei 2013, sec. 5.1). The same types carry the work of threads, processes
or distributed workers to the global step: `summed(words, parts)` adds the statistics of a
minibatch's chunks (inference/chunks.py) in the order given, so the sum does not depend on where
the chunks ran.
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

    @classmethod
    def summed(cls, words, parts):
        """The statistics of the union of `parts` (each over a subset of `words`, sorted unique),
        added part by part in the order given (the same order, the same bits)."""
        out = np.zeros((words.shape[0], parts[0].word_topic.shape[1]))
        n_docs, n_tokens = 0, 0.0
        for part in parts:
            out[np.searchsorted(words, part.words)] += part.word_topic
            n_docs += part.n_docs
            n_tokens += part.n_tokens
        return SufficientStats(words, out, n_docs, n_tokens)


@dataclass
class HDPStats(SufficientStats):
    """SufficientStats plus what the corpus sticks need.

    word_topic[j, k] = sum_d sum_i zeta_dik sum_n c_dn phi_dni over the tokens of word
    words[j] (fig. 9, step 11); tables[k] = sum_d m_dk, the expected number of occupied
    document slots pointing to topic k (inference/global_steps/hdp.py).
    """
    tables: np.ndarray = None

    def merge(self, other):
        merged = SufficientStats.merge(self, other)
        return HDPStats(merged.words, merged.word_topic, merged.n_docs, merged.n_tokens,
                        self.tables + other.tables)

    def scaled(self, factor):
        return HDPStats(self.words, self.word_topic * factor, self.n_docs, self.n_tokens,
                        self.tables * factor)

    @classmethod
    def summed(cls, words, parts):
        topics = SufficientStats.summed(words, parts)
        tables = np.zeros_like(parts[0].tables)
        for part in parts:
            tables += part.tables
        return HDPStats(topics.words, topics.word_topic, topics.n_docs, topics.n_tokens, tables)


@dataclass
class CTMStats:
    """Sufficient statistics of a minibatch for the CTM's M-step; merge and scale like SufficientStats."""
    topics: SufficientStats      # words, sum_d c phi per word, n_docs, n_tokens
    mu_sum: np.ndarray           # K, sum_d mu_d
    second_sum: np.ndarray       # K x K, sum_d Sigma_d + mu_d mu_d'
    bound: float                 # sum_d of the approximate objective

    @property
    def n_docs(self):
        return self.topics.n_docs

    @property
    def n_tokens(self):
        return self.topics.n_tokens

    def merge(self, other):
        return CTMStats(self.topics.merge(other.topics), self.mu_sum + other.mu_sum,
                        self.second_sum + other.second_sum, self.bound + other.bound)

    def scaled(self, factor):
        return CTMStats(self.topics.scaled(factor), self.mu_sum * factor, self.second_sum * factor,
                        self.bound * factor)

    @classmethod
    def summed(cls, words, parts):
        mu, second, bound = np.zeros_like(parts[0].mu_sum), np.zeros_like(parts[0].second_sum), 0.0
        for part in parts:
            mu += part.mu_sum
            second += part.second_sum
            bound += part.bound
        return CTMStats(SufficientStats.summed(words, [p.topics for p in parts]), mu, second, bound)
