"""scikit-learn estimators of the three models: `from topicscale import LDA, HDP, CTM`.

They train through `topicscale fit`'s own code (runs.run_fit): `fit(X)` writes the non-empty
rows of X to a temporary corpus (corpus/matrix.py) and fits it as `fit` fits a prepared corpus,
so the same rows and seed give the same topics, bit for bit. `transform` is `infer`'s local
step, `score` is `eval`'s default protocol (per-word log likelihood of document completion),
and `save` / `load` write and read the command line's model folder. Parameters are generated
from fit's declarations (estimator_params.py). Loaded through topicscale.__getattr__, so that
`import topicscale` imports neither scikit-learn nor numba.
"""
import numbers
import sys
import tempfile
import warnings
from collections.abc import Mapping
from contextlib import contextmanager
from pathlib import Path

import numpy as np

try:
    from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
    from sklearn.utils.validation import check_is_fitted, check_non_negative
except ImportError as exc:           # pragma: no cover - exercised in a subprocess by the tests
    raise ImportError("topicscale's scikit-learn estimators need scikit-learn: "
                      "pip install topicscale[sklearn]") from exc

from . import estimator_params as params, options
from .atomic import atomic_file
from .corpus import matrix
from .corpus.shards import Corpus
from .corpus.writers import check_words
from .errors import TopicscaleError
from .models import load_model, store

try:                                  # scikit-learn >= 1.6
    from sklearn.utils.validation import validate_data as _validate_data
except ImportError:                   # pragma: no cover - older scikit-learn
    def _validate_data(estimator, X, reset, **check):
        return estimator._validate_data(X, reset=reset, **check)


@contextmanager
def _numba_threads(threads):
    """numba's threads set to `threads` (None: all cores) for the duration, as fit --threads."""
    import numba
    try:
        threads = options.numba_threads(threads)
    except ValueError as exc:
        raise ValueError(f"threads={threads}: {exc}") from None
    before = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        yield threads
    finally:
        numba.set_num_threads(before)


def _say(message):
    """A run's note on stderr, in the parameters' terms; not its hint to resume the run (its
    temporary folder is gone)."""
    if "--resume" not in message:
        print(params.in_python_terms(message), file=sys.stderr)


def _writable(model):
    """The model with its arrays copied into fresh writable memory (an estimator loaded from a
    read-only memory map would otherwise hand read-only arrays to the kernels, which numba
    compiles apart)."""
    meta, arrays = model.stored()
    return type(model).from_stored(meta, {k: np.array(v) for k, v in arrays.items()}, list(model.vocab))


def _passes(summary, n_docs):
    """Passes a fit made over the documents it trained on (one that trains until the model stops
    improving holds some aside to score it: runs._run)."""
    return summary["docs"] / (n_docs - summary.get("held_aside", 0))


class _TopicModel(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """What the three estimators share; a subclass names its model `kind` and its summary."""
    kind = None
    summary = ""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.__init__ = params.make_init(cls.kind)
        cls.__doc__ = params.docstring(cls.kind, cls.summary)

    # ------------------------------------------------------------------ tags and input
    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.positive_only = True
        tags.input_tags.sparse = True
        return tags

    def _more_tags(self):             # scikit-learn < 1.6
        return {"requires_positive_X": True}

    def _rows(self, X, reset):
        """X checked as scikit-learn checks it (2-D, numeric, finite, not empty, the fitted
        width and column names; then non-negative), as Rows of the shards' dtypes (counts
        rounded). A loaded model's words are its column names, but X need not have any."""
        with warnings.catch_warnings():
            if not reset and getattr(self, "_named_by_model", False):   # X's columns are its words
                warnings.filterwarnings("ignore", "X does not have valid feature names")
            X = _validate_data(self, X, reset=reset, accept_sparse="csr")
        if reset:
            self.__dict__.pop("_named_by_model", None)
        check_non_negative(X, f"{type(self).__name__}")
        return matrix.as_rows(X)

    def _vocabulary(self, vocabulary, n_words):
        """The words of X's columns: `vocabulary`, else X's column names (a DataFrame), else
        w0, w1, ... (as `topicscale prepare` names the columns of a matrix without one)."""
        if vocabulary is None and hasattr(self, "feature_names_in_"):
            vocabulary = self.feature_names_in_
        if vocabulary is None:
            return _unnamed(n_words)
        words = _words(vocabulary)
        if len(words) != n_words:
            raise ValueError(f"vocabulary has {len(words)} words, but X has {n_words} columns")
        check_words(words)
        return words

    # ------------------------------------------------------------------ training
    def _train(self, corpus, of_x=False, **overrides):
        """`topicscale fit CORPUS` with this estimator's parameters (and `overrides` of the
        run's settings) into a temporary model folder: (model, summary, metrics lines). of_x:
        the corpus is X's, which errors name X."""
        config = params.fit_config(self.kind, self.get_params(deep=False))
        config.update(overrides)
        with tempfile.TemporaryDirectory(prefix="topicscale-fit-") as tmp, \
                _numba_threads(config["threads"]) as threads:
            from .runs import run_fit
            output = Path(tmp) / "model"
            config.update(model=self.kind, corpus=str(Path(corpus).resolve()), output=str(output),
                          force=False, threads=threads)
            try:
                summary, signum = run_fit(config, say=_say)
            except TopicscaleError as exc:
                message = str(exc).replace(config["corpus"], "X") if of_x else str(exc)
                raise ValueError(params.in_python_terms(message)) from None
            if signum:
                raise KeyboardInterrupt(f"training stopped by signal {signum}; nothing was fitted")
            return load_model(output), summary, (output / store.METRICS_FILE).read_text(encoding="utf-8")

    def _fitted(self, model, passes, metrics):
        self.model_ = model
        self.n_iter_ = passes
        self.n_batch_iter_ = int(model.step)
        self._metrics = metrics
        return self

    def fit(self, X, y=None, vocabulary=None):
        """Fit the model to X (documents x words, counts; rounded to whole counts) as `topicscale
        fit` fits a corpus prepared from X's non-empty rows. `vocabulary`: the words of X's
        columns (kept in the model: `topics`, `save`), in order, or a mapping of each word to its
        column (CountVectorizer.vocabulary_). y is ignored."""
        params.fit_config(self.kind, self.get_params(deep=False))       # refuse bad values first
        rows = self._rows(X, reset=True)
        words = self._vocabulary(vocabulary, self.n_features_in_)
        self._check_init_model(words)
        with tempfile.TemporaryDirectory(prefix="topicscale-corpus-") as tmp:
            n_docs = matrix.write_counted_corpus(Path(tmp) / "corpus", rows, words)
            model, summary, metrics = self._train(Path(tmp) / "corpus", of_x=True, total_samples=None)
        if model.settings.get("corpus"):          # the temporary corpus is gone
            del model.settings["corpus"]
        return self._fitted(model, _passes(summary, n_docs), metrics)

    def fit_corpus(self, corpus):
        """Fit the model to a prepared corpus folder (streamed from disk, as `topicscale fit`)."""
        try:
            prepared = Corpus(corpus)
            n_docs, n_words = prepared.n_docs, prepared.n_words
        except TopicscaleError as exc:
            raise ValueError(str(exc)) from None
        model, summary, metrics = self._train(corpus, total_samples=None)
        if hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        self.n_features_in_ = n_words
        return self._fitted(model, _passes(summary, n_docs), metrics)

    def partial_fit(self, X, y=None, vocabulary=None):
        """One pass over X, continuing the model fitted so far as `topicscale fit --init MODEL
        --passes 1` continues it (its step counter carries on), or, on the first call, a fit of
        one pass. The global step scales a minibatch's statistics to a corpus of total_samples
        documents (default: X's rows); streaming a larger corpus in chunks, give its size. y is
        ignored."""
        if getattr(self, "polish", None):
            raise ValueError("polish sweeps a whole corpus after training, so it goes with fit and "
                             "fit_corpus, not with partial_fit (one pass over the X of each call)")
        if getattr(self, "merge", None):
            raise ValueError("merge scores the merged topics on documents held aside from a whole corpus, so "
                             "it goes with fit and fit_corpus, not with partial_fit")
        first = not hasattr(self, "model_")
        if first and getattr(self, "start", None) == "assignment":      # later, the model keeps its own
            raise ValueError("start='assignment' pays with the polish, which partial_fit refuses: use "
                             "fit or fit_corpus")
        if not first:
            self._warn_kept_parameters()
        rows = self._rows(X, reset=first)
        if first:
            words = self._vocabulary(vocabulary, self.n_features_in_)
            self._check_init_model(words)
        else:
            words = self.model_.vocab
            if vocabulary is not None and _words(vocabulary) != list(words):
                raise ValueError("vocabulary differs from the fitted model's")
        one_pass = {"passes": 1.0, "max_docs": None, "time_limit": None}
        with tempfile.TemporaryDirectory(prefix="topicscale-corpus-") as tmp:
            n_docs = matrix.write_counted_corpus(Path(tmp) / "corpus", rows, words)
            if first:
                model, summary, metrics = self._train(Path(tmp) / "corpus", of_x=True, **one_pass)
                prior = ""
            else:
                from .registry import MODELS
                self.model_.save(Path(tmp) / "init")
                kept = {name: None for name in MODELS[self.kind].options}   # the model keeps its own
                model, summary, metrics = self._train(Path(tmp) / "corpus", of_x=True, **one_pass, **kept,
                                                      init_model=str(Path(tmp) / "init"))
                prior = self._metrics
        model.settings.pop("corpus", None)
        return self._fitted(model, _passes(summary, n_docs), prior + metrics)

    def _check_init_model(self, words):
        """init_model (when given), before X is written: a model of this kind whose words are X's
        columns' (the command line's errors would name a temporary corpus and `prepare`)."""
        if self.init_model is None:
            return
        path = params.check_value("init_model", self.init_model)
        try:
            meta, _, vocab = store.load(path)
        except TopicscaleError as exc:
            raise ValueError(f"init_model={self.init_model!r}: {exc}") from None
        kind = meta.get("model")
        if kind != self.kind:
            raise ValueError(f"init_model={self.init_model!r} holds a {kind} model: continue it with "
                             f"topicscale.{kind.upper()}(init_model=...)")
        if vocab != list(words):
            raise ValueError(f"init_model={self.init_model!r}: X's columns must be the model's words, in its "
                             f"order: pass them as vocabulary= (topicscale.{kind.upper()}.load(init_model)"
                             ".model_.vocab)")

    def _warn_kept_parameters(self):
        """A warning for each parameter set (set_params) to other than what the fitted model keeps:
        partial_fit continues that model, as `fit --init` does, whatever they say."""
        for name, own in _kept(self.model_).items():
            value = getattr(self, name, None)
            if value is not None and value != own:
                warnings.warn(f"{name}={value!r} differs from the fitted model's {own!r}: partial_fit "
                              "continues the fitted model with its own (fit starts a new one)", stacklevel=3)

    # ------------------------------------------------------------------ using the model
    @property
    def components_(self):
        """lambda (K x V), the topics' variational Dirichlet parameters (as scikit-learn's
        components_); E[beta] = components_ / components_.sum(axis=1, keepdims=True)."""
        check_is_fitted(self, "model_")
        return self.model_.lam.T

    def top_words(self, n=10, relevance=1.0):
        """{topic: its n top words} of the topics `topicscale topics` lists, in its order: by
        probability, or below relevance 1 by relevance as `topics --relevance` ranks them."""
        check_is_fitted(self, "model_")
        if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
            raise ValueError(f"n must be a whole number from 1, got {n!r}")
        if isinstance(relevance, bool) or not isinstance(relevance, numbers.Real) \
                or not 0.0 <= relevance <= 1.0:
            raise ValueError(f"relevance must be a number from 0 to 1, got {relevance!r}")
        from .coherence import listed_top_words, relevance_scale
        m = self.model_
        return {k: [m.vocab[i] for i in ids]
                for k, ids, _ in listed_top_words(m, int(n), relevance_scale(m, float(relevance)))}

    @property
    def _n_features_out(self):
        return self.model_.n_topics

    def _threads(self):
        return None if self.threads is None else params.check_value("threads", self.threads)

    def transform(self, X):
        """Topic proportions E[theta] of X's rows (n_samples x K), by the local step `topicscale
        infer` uses; a row with no counts gets those of an empty document."""
        check_is_fitted(self, "model_")
        rows = self._rows(X, reset=False)
        from . import registry
        from .infer import proportions
        with _numba_threads(self._threads()):
            local = registry.local_step_for(self.model_)
            thetas = [theta for _, theta in proportions(self.model_, local, matrix.blocks(rows))]
        return np.concatenate(thetas) if thetas else np.zeros((0, self.model_.n_topics))

    def score(self, X, y=None):
        """Per-word log likelihood of X's rows by document completion: what `topicscale eval
        MODEL HELDOUT` reports by default on a corpus prepared from them (LDA: the common
        fold-in; HDP and CTM: their own predictive). Higher is better; NaN when no row has two
        distinct words to split. y is ignored."""
        check_is_fitted(self, "model_")
        rows = self._rows(X, reset=False)
        from .evaluate import evaluate_model
        with tempfile.TemporaryDirectory(prefix="topicscale-heldout-") as tmp, \
                _numba_threads(self._threads()):
            matrix.write_corpus(Path(tmp) / "heldout", rows, self.model_.vocab)
            return float(evaluate_model(self.model_, Corpus(Path(tmp) / "heldout"))["per_word_ll"])

    def perplexity(self, X):
        """exp(-score(X))."""
        return float(np.exp(-self.score(X)))

    # ------------------------------------------------------------------ model folders
    def save(self, path):
        """Write the model folder `path` (model.npz and metrics.jsonl, each replaced atomically),
        which `topicscale topics`, `eval`, `infer`, `info`, `export` and `fit --init` read."""
        check_is_fitted(self, "model_")
        self.model_.save(path)
        with atomic_file(Path(path) / store.METRICS_FILE, "w") as fh:
            fh.write(self._metrics)
        return self

    @classmethod
    def load(cls, path):
        """The estimator of the model folder `path` (written by `topicscale fit` or `save`):
        fitted, its parameters those the model was trained with, but None for what a fit given
        none chooses (polish auto, the start beside it, the HDP's merges), as in memory. Its
        words, unless w0, w1, ..., are its feature_names_in_: a DataFrame's columns must match.
        n_iter_ is None (the passes of the run that wrote it are not recorded)."""
        try:
            model = load_model(path)
        except TopicscaleError as exc:
            raise ValueError(str(exc)) from None
        if model.kind != cls.kind:
            raise ValueError(f"{path} holds a {model.kind} model: load it with "
                             f"topicscale.{model.kind.upper()}.load")
        names = set(params.param_names(cls.kind))
        given = {k: v for k, v in model.settings.items() if k in names}
        given.update(_kept(model))
        if given.get("alpha") == _default_alpha(model):     # a clone with another K or step takes its own
            given["alpha"] = None
        if given.get("polish") == "auto":     # chosen by a fit without them, as the start beside it
            given["polish"] = None
            given.pop("start", None)
        if given.get("merge") is True:
            given["merge"] = None
        estimator = cls(**given)
        estimator.n_features_in_ = model.n_words
        if model.vocab != _unnamed(model.n_words):
            estimator.feature_names_in_ = np.asarray(model.vocab, dtype=object)
            estimator._named_by_model = True
        metrics = Path(path) / store.METRICS_FILE
        text = metrics.read_text(encoding="utf-8") if metrics.is_file() else ""
        return estimator._fitted(model, None, text)

    def __setstate__(self, state):
        if state.get("model_") is not None:
            state = dict(state, model_=_writable(state["model_"]))
        super().__setstate__(state)


def _unnamed(n_words):
    """The words of columns without names: w0, w1, ... (as `topicscale prepare` names them)."""
    return [f"w{i}" for i in range(n_words)]


def _words(vocabulary):
    """The words of a vocabulary: a sequence of words, or a mapping of each word to its column
    (scikit-learn's CountVectorizer.vocabulary_) taken in column order."""
    if not isinstance(vocabulary, Mapping):
        return [str(w) for w in vocabulary]
    columns = list(vocabulary.values())
    if (not all(isinstance(c, numbers.Integral) and not isinstance(c, bool) for c in columns)
            or sorted(columns) != list(range(len(columns)))):
        raise ValueError("vocabulary as a mapping takes each word to its column of X: its values must be "
                         f"the columns 0 to {len(columns) - 1}, each once")
    return [str(w) for w in sorted(vocabulary, key=vocabulary.__getitem__)]


def _kept(model):
    """The parameters a fitted model keeps whatever an estimator's say (as `fit --init` does):
    n_components, and eta, alpha and omega where it has them, "auto" for a learned prior."""
    kept = {"n_components": getattr(model, "truncation", model.n_topics),
            "eta": "auto" if model.settings.get("eta_auto") else float(model.eta)}
    if hasattr(model, "alpha"):
        kept["alpha"] = ("auto" if model.settings.get("alpha_auto")
                         else float(np.asarray(model.alpha).reshape(-1)[0]))
    if hasattr(model, "omega"):
        kept["omega"] = float(model.omega)
    return kept


def _default_alpha(model):
    """The alpha a model gets when none is given: LDA 1/K, the HDP models/hdp.default_alpha of its
    local step."""
    if model.kind == "hdp":
        from .models.hdp import default_alpha
        return default_alpha(model.settings.get("local"))
    return 1.0 / model.n_topics


class LDA(_TopicModel):
    kind = "lda"
    summary = """Latent Dirichlet allocation (`topicscale fit --model lda`) as a scikit-learn
    transformer: fit(X) on a document-term matrix of counts (numpy or scipy.sparse; fractional
    values are rounded to whole counts), transform(X) gives topic proportions, score(X) the
    held-out per-word log likelihood of `topicscale eval`. A parameter left None is not given,
    as on the command line; the defaults below then apply. max_iter is the E-step cap (sweeps
    per document), not the passes over the data as in scikit-learn's LatentDirichletAllocation:
    those are `passes`."""


class HDP(_TopicModel):
    kind = "hdp"
    summary = """Online hierarchical Dirichlet process topic model (`topicscale fit --model hdp`)
    as a scikit-learn transformer (see LDA): n_components is the corpus truncation (partial_fit
    of a merged model continues the topics the merges kept, so components_ and transform then
    hold fewer). max_iter is the E-step cap (sweeps per document), not the passes over the data:
    those are `passes`."""


class CTM(_TopicModel):
    kind = "ctm"
    summary = """Correlated topic model (`topicscale fit --model ctm`) as a scikit-learn
    transformer (see LDA); model_.correlations() gives the topic correlations. max_iter is the
    E-step cap (iterations per document), not the passes over the data: those are `passes`."""
