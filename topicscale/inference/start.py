"""`fit --start assignment`: LDA topics that start from a random assignment of the corpus's tokens.

A collapsed Gibbs sampler starts with every token given a topic uniformly at random (Griffiths
and Steyvers 2004), and batch CVB0 with random responsibilities (Asuncion, Welling, Smyth and Teh
2009): each topic starts as N/K tokens of real data with the noise of the draw, so the topics
differ from the first sweep. The near-uniform start (models/lda.py) gives each topic V
pseudo-counts; with many topics, K V far above the N tokens, the stochastic passes leave most
topics near-uniform copies of the corpus's frequent words, and the polish's sweeps keep them so.
From the assignment the sweeps part them, and the streamed passes add little but time: a run
without --passes makes one (runs.run_limits) and trains on by the sweeps.
"""
import numpy as np


def assigned_topics(corpus, n_topics, eta, seed):
    """lambda = eta + n_wk (V x K, word-major), n_wk the number of tokens of word w given topic k
    when each token of `corpus` (streamed in blocks) draws its topic uniformly from K."""
    rng = np.random.default_rng([seed, 0xA551])
    lam = np.zeros((corpus.n_words, n_topics))
    flat = lam.reshape(-1)
    for block in corpus.blocks():
        words = np.repeat(block.indices.astype(np.int64), block.counts.astype(np.int64))
        np.add.at(flat, words * n_topics + rng.integers(n_topics, size=words.shape[0]), 1.0)
    lam += eta
    return lam
