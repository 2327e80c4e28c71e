"""Name -> implementation, per model: the CLI's choices and the shared conformance tests.

Entries are import paths, so listing the choices (e.g. for --help) does not import numba.

The contracts (see models/lda.py, inference/local.py and inference/svi.py for LDA's):
- a model class: `kind`, `initial(vocab, config, rng)`, `save`, `from_stored`,
  `estep_topics(words=None)` (what its local steps take as topics), `local_prior()`,
  `expected_beta()` (V x K E[beta]), `topic_weights()`, `display_order(show_all)`, `describe()`.
- a local step: `fit(indptr, indices, counts, topics, prior) -> result with .theta (D x K)`,
  `statistics(batch, model) -> (SufficientStats, result)`, and optionally
  `estep_topics(model, words=None)` when it needs other topics than the model's default.
- a global step: `__init__(model, local, corpus_docs, **options)`, `step(batch) -> metrics`.
Constructors receive the fit settings whose names match their keyword arguments (`build`).
"""
import importlib
import inspect

MODELS = {"lda": "topicscale.models.lda:LDAModel", "hdp": "topicscale.models.hdp:HDPModel"}
ALGORITHMS = {
    "lda": {"svi": "topicscale.inference.svi:SVI",
            "scvb0": "topicscale.inference.scvb0:SCVB0",
            "ssmf-a": "topicscale.inference.ssmf:SSMFA",
            "ssmf": "topicscale.inference.ssmf_full:SSMF",
            "batch": "topicscale.inference.batch:BatchVB"},
    "hdp": {"svi": "topicscale.inference.hdp:HDPSVI"},
}
LOCAL_STEPS = {
    "lda": {"meanfield": "topicscale.inference.local:MeanField",
            "cvb0": "topicscale.inference.cvb0:CVB0",
            "gibbs": "topicscale.inference.gibbs:Gibbs"},
    "hdp": {"hdp": "topicscale.inference.hdp:HDPLocal"},
}
DEFAULT_LOCAL = {("lda", "svi"): "meanfield", ("lda", "scvb0"): "cvb0", ("lda", "ssmf-a"): "gibbs",
                 ("lda", "ssmf"): "gibbs",
                 ("lda", "batch"): "meanfield", ("hdp", "svi"): "hdp"}
# LDA SVI's local step when none is given (runs.default_local): CVB0 (SCVB0's document step) for
# runs over short documents (fewer distinct words a document than SHORT_DOCUMENT_WORDS on average)
# that make at least MANY_UPDATES minibatch updates; mean-field otherwise (README, "Choosing the
# local step")
SHORT_DOCUMENT_WORDS = 64
MANY_UPDATES = 150
# local steps each global step accepts besides its default (the SSMF paper's matrix, fig. 3)
OTHER_LOCALS = {("lda", "svi"): ("cvb0", "gibbs"), ("lda", "ssmf-a"): ("meanfield", "cvb0"),
               ("lda", "ssmf"): ("meanfield", "cvb0")}
# correlated topic model (Wang and Blei 2013): Laplace / delta-method document steps, batch or stochastic EM
MODELS["ctm"] = "topicscale.models.ctm:CTMModel"
ALGORITHMS["ctm"] = {"batch": "topicscale.inference.ctm:CTMBatch", "svi": "topicscale.inference.ctm:CTMSVI"}
LOCAL_STEPS["ctm"] = {"laplace": "topicscale.inference.ctm:Laplace", "delta": "topicscale.inference.ctm:Delta",
                      "bbvi": "topicscale.inference.ctm_bbvi:BBVI"}     # black-box VI (Ranganath et al. 2014)
DEFAULT_LOCAL[("ctm", "batch")] = "laplace"
DEFAULT_LOCAL[("ctm", "svi")] = "laplace"
OTHER_LOCALS[("ctm", "batch")] = ("delta", "bbvi")
OTHER_LOCALS[("ctm", "svi")] = ("delta", "bbvi")


def names(table):
    """Every name a per-model table offers (for click.Choice)."""
    return sorted({name for per_model in table.values() for name in per_model})


def resolve(path):
    module, attr = path.split(":")
    return getattr(importlib.import_module(module), attr)


def lookup(table, model, name, what):
    """The class registered for `model` under `name`, or a clear error."""
    from .errors import TopicscaleError
    options = table.get(model, {})
    if name not in options:
        raise TopicscaleError(f"--{what} {name} is not available for --model {model} "
                              f"(choose from: {', '.join(sorted(options))})")
    return resolve(options[name])


def build(cls, *args, settings=None, **kwargs):
    """cls(*args, **kwargs, **the settings named like cls's keyword arguments)."""
    params = list(inspect.signature(cls).parameters)[len(args):]
    chosen = {k: v for k, v in (settings or {}).items()
              if k in params and k not in kwargs and v is not None}
    return cls(*args, **chosen, **kwargs)


def check_local(model, algorithm, local):
    """Refuse combinations outside the accepted matrix, saying which ones are accepted."""
    from .errors import TopicscaleError
    default = DEFAULT_LOCAL.get((model, algorithm))
    accepted = (default,) + OTHER_LOCALS.get((model, algorithm), ())
    if local not in accepted:
        raise TopicscaleError(f"--local {local} does not go with --algorithm {algorithm} "
                              f"(accepted: {', '.join(accepted)})")


def local_step_for(model):
    """The local step a model was trained with, built with its saved settings."""
    s = model.settings
    algorithm = s.get("algorithm", "svi")
    name = s.get("local") or DEFAULT_LOCAL[(model.kind, algorithm)]
    return build(lookup(LOCAL_STEPS, model.kind, name, "local"), settings=s)


def local_topics(local, model):
    """The topics (V x K) `local` runs on: its own choice, else the model's estep_topics()."""
    return local.estep_topics(model) if hasattr(local, "estep_topics") else model.estep_topics()
