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
WARM_DOCS = 8             # scored before the clock starts, to load the scoring's kernels


class RowSample:
    """Some rows of a corpus, read like a Corpus by evaluate_model (vocab, n_words, blocks)."""

    def __init__(self, corpus, rows):
        self.corpus = corpus
        self.rows = np.asarray(rows, dtype=np.int64)
        self.vocab, self.n_words, self.n_docs = corpus.vocab, corpus.n_words, self.rows.shape[0]

    def row_blocks(self, block_docs=4096):
        for start in range(0, self.n_docs, block_docs):
            yield self.rows[start:start + block_docs]

    def blocks(self, block_docs=4096):
        for rows in self.row_blocks(block_docs):
            yield self.corpus.rows(rows)


def training_sample(corpus, seed, n=SAMPLE_DOCS):
    """Up to n training documents, drawn by the seed, in row order."""
    rng = np.random.default_rng([seed, 0xC0DE])
    rows = np.arange(corpus.n_docs) if corpus.n_docs <= n else rng.choice(corpus.n_docs, n, replace=False)
    return RowSample(corpus, np.sort(rows))


class PassScorer:
    """score(model) -> per-word log likelihood of the documents scored after every pass: the
    held-out corpus when there is one, else training_sample; `scored_on` says which. executor:
    where the documents are read and scored (evaluate.document_completion)."""

    def __init__(self, corpus, heldout, seed, executor=None):
        self.executor = executor
        if heldout is not None:
            self.documents, self.scored_on = heldout, "the held-out corpus"
            self.few = RowSample(heldout, np.arange(min(WARM_DOCS, heldout.n_docs)))
        else:
            self.documents = training_sample(corpus, seed)
            self.scored_on = f"{self.documents.n_docs} training documents"
            self.few = RowSample(corpus, self.documents.rows[:WARM_DOCS])
        self.heldout = heldout
        self.last = None                # (model step, evaluate_model's result) of the last score

    def __call__(self, model):
        from .evaluate import evaluate_model
        result = evaluate_model(model, self.documents, executor=self.executor)
        self.last = (model.step, result)
        return result["per_word_ll"]

    def topics_score(self, model):
        """The score `--polish auto` checks the sweeps by: a pass's score for LDA (eval's default
        protocol, the common fold-in); for other models, scored by their own predictive, the
        common fold-in of the topics they export, so that sweeps that raise the own predictive
        but blur the exported topics for everyone else (the HDP on SOTU paragraphs) are not kept."""
        from .evaluate import COMMON_KINDS, evaluate_exported
        if model.kind in COMMON_KINDS:
            return self(model)
        return evaluate_exported(model, self.documents, executor=self.executor)["per_word_ll"]

    def heldout_result(self, model):
        """evaluate_model(model, heldout)'s result when the last score was that, for this model
        (no step since), else None: the run's final held-out evaluation need not repeat it."""
        if self.heldout is not None and self.last is not None and self.last[0] == model.step:
            return self.last[1]
        return None

    def forget(self):
        """The model changed without a step (fit --polish): the last score is not its."""
        self.last = None

    def warm_up(self, model):
        """Load the scoring's kernels by scoring a few documents (one might be too short to split);
        reads the model only."""
        from .evaluate import COMMON_KINDS, evaluate_exported, evaluate_model
        evaluate_model(model, self.few, executor=self.executor)
        if model.kind not in COMMON_KINDS:
            evaluate_exported(model, self.few, executor=self.executor)


def stopped_converging(scores, min_gain=MIN_GAIN):
    """True when the last pass gained less than min_gain over the one before."""
    return len(scores) >= 2 and scores[-1] - scores[-2] < min_gain
