"""How long `fit` trains without --passes (nor --time-limit, --max-docs): until the model stops
improving, within a cap.

After every pass the model is scored by document completion (evaluate.evaluate_model, eval's
default protocol; the HDP's by the common fold-in of the topics it exports, evaluate_exported)
on the held-out corpus when the run has one, else on documents drawn by the seed and held aside
from training (aside_rows: a twentieth of the corpus, at most ASIDE_DOCS). Scored on documents it
trains on, a model keeps gaining after held-out documents stopped (an HDP's own predictive for
dozens of passes), so it trains too long. A corpus too small to spare ASIDE_MIN documents is
scored on a sample of its training documents. Training stops when PATIENCE passes in a row
(an HDP's: HDP_PATIENCE) fail to beat the best score by MIN_GAIN nats a word, or after MAX_PASSES
passes. One pass of a corpus of a billion tokens already gains little in its second; a few
thousand documents need dozens.
"""
import numpy as np

MIN_GAIN = 0.002          # nats a word a pass
MAX_PASSES = 50
PATIENCE = 2              # passes in a row that must fail to gain
HDP_PATIENCE = 3          # ... an HDP's (patience)
SAMPLE_DOCS = 1000        # training documents scored when none are held aside
ASIDE_DOCS = 1000
ASIDE_SHARE = 20          # at most one document in ASIDE_SHARE held aside
ASIDE_MIN = 100
WARM_DOCS = 8             # scored before the clock starts, to load the scoring's kernels
BY_EXPORTED_TOPICS = ("hdp",)     # models whose passes are scored by evaluate_exported
SWEEPS_BURN_IN = 20       # passes of the CVB0 document completion that scores LDA's polish


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
    """Up to n training documents, drawn by the seed, in row order (of a corpus less the
    documents held aside, CorpusWithout, among those it keeps)."""
    rng = np.random.default_rng([seed, 0xC0DE])
    rows = np.arange(corpus.n_docs) if corpus.n_docs <= n else np.sort(rng.choice(corpus.n_docs, n, replace=False))
    return RowSample(corpus, corpus.kept_rows(rows) if hasattr(corpus, "kept_rows") else rows)


def aside_rows(corpus, seed):
    """The documents a run that trains until the model stops improving holds aside to score its
    passes (module docstring), drawn by the seed in row order; None when the corpus cannot spare
    ASIDE_MIN."""
    n = min(ASIDE_DOCS, corpus.n_docs // ASIDE_SHARE)
    if n < ASIDE_MIN:
        return None
    rng = np.random.default_rng([seed, 0xA51DE])
    return np.sort(rng.choice(corpus.n_docs, n, replace=False))


class PassScorer:
    """score(model) -> per-word log likelihood of the documents scored after every pass (and by
    `--polish auto`): the held-out corpus when there is one, else the rows `aside` of `corpus`
    (held aside from training: aside_rows), else training_sample, by the protocol of the model's
    `kind` (module docstring); `scored_on` says which. executor: where the documents are read and
    scored (evaluate.document_completion)."""

    def __init__(self, corpus, heldout, seed, kind="lda", executor=None, aside=None):
        self.executor = executor
        if heldout is not None:
            self.documents, self.scored_on = heldout, "the held-out corpus"
            self.few = RowSample(heldout, np.arange(min(WARM_DOCS, heldout.n_docs)))
        elif aside is not None:
            self.documents = RowSample(corpus, aside)
            self.scored_on = f"{self.documents.n_docs} documents held aside from training"
            self.few = RowSample(corpus, self.documents.rows[:WARM_DOCS])
        else:
            self.documents = training_sample(corpus, seed)
            self.scored_on = f"{self.documents.n_docs} training documents"
            self.few = RowSample(corpus, self.documents.rows[:WARM_DOCS])
        self.by_exported = kind in BY_EXPORTED_TOPICS
        self.documents_in_words = self.scored_on
        if self.by_exported:
            self.scored_on += " (the common fold-in of the exported topics)"
        self.heldout = heldout
        self.last = None                # (model step, evaluate_model's result) of the last score

    def __call__(self, model):
        result = self._evaluate(model, self.documents)
        self.last = (model.step, result)
        return result["per_word_ll"]

    def _evaluate(self, model, documents):
        from .evaluate import evaluate_exported, evaluate_model
        evaluate = evaluate_exported if self.by_exported else evaluate_model
        return evaluate(model, documents, executor=self.executor)

    def sweeps_score(self, model):
        """`--polish auto`'s score of the topics before and after the sweeps: CVB0 document
        completion of the same documents, SWEEPS_BURN_IN passes a document, under the model's
        prior (an HDP's alpha0 E[sigma_k], so for an HDP trained with the CVB0 document step its
        own predictive). The mean-field fold-in with alpha = 1/K puts a short document on one or two
        topics and so scores the sweeps' sharp topics below the passes' blurred ones where a
        collapsed Gibbs fold-in (the posterior predictive it approximates) scores them alike or
        higher; the CVB0 fold-in does not. An HDP trained with another document step (mean-field,
        on long documents) is scored as its passes are: by the CVB0 fold-in it keeps sweeps that
        lose by its own predictive and both common fold-ins."""
        if self._sweeps_by_exported(model):
            return self(model)
        return self._cvb0_completion(model, self.documents)

    def _sweeps_by_exported(self, model):
        from .registry import local_step_for
        return self.by_exported and local_step_for(model).name != "cvb0"

    def _cvb0_completion(self, model, documents):
        from .evaluate import document_completion
        from .inference.local_steps.cvb0 import CVB0
        topics = model.expected_beta()
        return document_completion(documents, topics, topics, model.local_prior(),
                                   local=CVB0(burn_in=SWEEPS_BURN_IN), executor=self.executor)["per_word_ll"]

    def sweeps_scored_on(self, model):
        """What sweeps_score scores, in words."""
        if self._sweeps_by_exported(model):
            return self.scored_on
        return f"{self.documents_in_words} (CVB0 fold-in, {SWEEPS_BURN_IN} passes a document)"

    def heldout_result(self, model):
        """evaluate_model(model, heldout)'s result when the last score was that, for this model
        (no step since), else None: the run's final held-out evaluation need not repeat it."""
        if (self.heldout is not None and not self.by_exported and self.last is not None
                and self.last[0] == model.step):
            return self.last[1]
        return None

    def forget(self):
        """The model changed without a step (fit --polish): the last score is not its."""
        self.last = None

    def warm_up(self, model, passes=True, sweeps=False):
        """Load the kernels of the scores a run takes, the passes' (`passes`, also the merges')
        and sweeps_score's (`sweeps`), by scoring a few documents (one might be too short to
        split); reads the model only."""
        by_exported = self._sweeps_by_exported(model)
        if passes or (sweeps and by_exported):
            self._evaluate(model, self.few)
        if sweeps and not by_exported:
            self._cvb0_completion(model, self.few)


def patience(kind):
    """Passes in a row that must fail to gain before a model of `kind` stops. An HDP's score can
    stay flat for a pass or two before its topics come apart; on documents of a dozen words,
    stopping there left most of its topics repeating one another, and the merges (merge.py) then
    folded them into a handful of topics."""
    return HDP_PATIENCE if kind == "hdp" else PATIENCE


def stopped_converging(scores, min_gain=MIN_GAIN, patience=PATIENCE):
    """True when each of the last `patience` passes failed to beat the best score before it by
    min_gain (scored on unseen documents, a stochastic pass can lose a little and the next gain)."""
    if len(scores) <= patience:
        return False
    return all(scores[i] - max(scores[:i]) < min_gain for i in range(len(scores) - patience, len(scores)))
