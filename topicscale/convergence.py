"""How long `fit` trains without --passes (nor --time-limit, --max-docs): until the model stops
improving, within a cap.

After every pass the model is scored by document completion (evaluate.evaluate_model, eval's
default protocol) on the held-out corpus when the run has one, else on a fixed sample of
training documents drawn by the seed. Training stops when a pass gains less than MIN_GAIN nats
a word, or after MAX_PASSES passes. One pass of a corpus of a billion tokens already gains
little in its second; a few thousand documents need dozens.
"""
import numpy as np

MIN_GAIN = 0.002          # nats a word a pass
MAX_PASSES = 50
SAMPLE_DOCS = 1000


class RowSample:
    """Some rows of a corpus, read like a Corpus by evaluate_model (vocab, n_words, blocks)."""

    def __init__(self, corpus, rows):
        self.corpus = corpus
        self.rows = np.asarray(rows, dtype=np.int64)
        self.vocab, self.n_words, self.n_docs = corpus.vocab, corpus.n_words, self.rows.shape[0]

    def blocks(self, block_docs=4096):
        for start in range(0, self.n_docs, block_docs):
            yield self.corpus.rows(self.rows[start:start + block_docs])


def training_sample(corpus, seed, n=SAMPLE_DOCS):
    """Up to n training documents, drawn by the seed, in row order."""
    rng = np.random.default_rng([seed, 0xC0DE])
    rows = np.arange(corpus.n_docs) if corpus.n_docs <= n else rng.choice(corpus.n_docs, n, replace=False)
    return RowSample(corpus, np.sort(rows))


def pass_scorer(corpus, heldout, seed):
    """(score(model) -> per-word log likelihood, what it is scored on, in words)."""
    from .evaluate import evaluate_model
    if heldout is not None:
        return (lambda m: evaluate_model(m, heldout)["per_word_ll"]), "the held-out corpus"
    sample = training_sample(corpus, seed)
    return (lambda m: evaluate_model(m, sample)["per_word_ll"]), f"{sample.n_docs} training documents"


def stopped_converging(scores, min_gain=MIN_GAIN):
    """True when the last pass gained less than min_gain over the one before."""
    return len(scores) >= 2 and scores[-1] - scores[-2] < min_gain
