"""The model x algorithm x local-step matrix, and the `fit` options each part owns.

MATRIX is the one table of accepted combinations: a row names a model, a global step (the
`--algorithm`) and the local steps it accepts, its default first. Every part declares the fit
options it owns (`Part.options`); options.check refuses an option that no part of a run owns.
Parts are import paths, so listing choices and validating options (for `--help` and before a
fit writes anything) imports no numba. The methods each part's class provides are the Protocols
of topicscale/contracts.py. A new algorithm is one file in topicscale/inference/global_steps/
(a new document step: in local_steps/) and its row here.
"""
import importlib
import inspect
from dataclasses import dataclass

from .errors import TopicscaleError


@dataclass(frozen=True)
class Part:
    """A model, global step or local step: its class (an import path) and the fit options it owns.

    refuses: (global steps) options of a local step that do not apply under this global step,
    with the reason (SSMF hands the local step sampled topics, so the E-step's choice of topics
    has nothing to choose)."""
    path: str
    options: tuple = ()
    refuses: tuple = ()
    why_refused: str = ""


@dataclass(frozen=True)
class Cell:
    """One accepted model x global step, with its local steps (the default first)."""
    model: str
    algorithm: str
    step: Part
    locals: tuple


MODELS = {
    "lda": Part("topicscale.models.lda:LDAModel", ("n_topics", "alpha", "eta", "start", "polish")),
    "hdp": Part("topicscale.models.hdp:HDPModel", ("n_topics", "alpha", "eta", "omega", "polish", "merge")),
    "ctm": Part("topicscale.models.ctm:CTMModel", ("n_topics", "eta")),
}
# the folders of the two kinds of step (one file a step; topicscale/inference/)
_LOCAL = "topicscale.inference.local_steps."
_GLOBAL = "topicscale.inference.global_steps."
LOCAL_STEPS = {
    "meanfield": Part(_LOCAL + "meanfield:MeanField",
                      ("max_iter", "tol", "accelerate", "precision", "estep_beta")),
    "cvb0": Part(_LOCAL + "cvb0:CVB0"),
    "gibbs": Part(_LOCAL + "gibbs:Gibbs"),
    "hdp": Part(_LOCAL + "hdp:HDPLocal", ("max_iter", "tol", "doc_truncation")),
    "laplace": Part(_LOCAL + "ctm:Laplace", ("max_iter", "tol")),
    "delta": Part(_LOCAL + "ctm:Delta", ("max_iter", "tol")),
    "bbvi": Part(_LOCAL + "bbvi:BBVI"),
}
_SAMPLED = dict(refuses=("estep_beta",), why_refused="the local step runs on sampled topics")
MATRIX = (
    Cell("lda", "svi", Part(_GLOBAL + "svi:SVI", ("tau", "kappa")), ("meanfield", "cvb0", "gibbs")),
    Cell("lda", "scvb0", Part(_GLOBAL + "scvb0:SCVB0", ("tau", "kappa")), ("cvb0",)),
    Cell("lda", "ssmf-a", Part(_GLOBAL + "ssmf_a:SSMFA", ("tau", "kappa"), **_SAMPLED),
         ("gibbs", "meanfield", "cvb0")),
    Cell("lda", "ssmf", Part(_GLOBAL + "ssmf:SSMF", ("tau", "kappa"), **_SAMPLED),
         ("gibbs", "meanfield", "cvb0")),
    Cell("lda", "batch", Part(_GLOBAL + "batch:BatchVB"), ("meanfield",)),
    Cell("hdp", "svi", Part(_GLOBAL + "hdp:HDPSVI", ("tau", "kappa")), ("meanfield", "hdp", "cvb0")),
    Cell("ctm", "batch", Part(_GLOBAL + "ctm:CTMBatch"), ("laplace", "delta", "bbvi")),
    Cell("ctm", "svi", Part(_GLOBAL + "ctm:CTMSVI", ("tau", "kappa")), ("laplace", "delta", "bbvi")),
)
# The local step of LDA SVI and of the HDP (direct view) when none is given (runs.default_step):
# CVB0 (SCVB0's document step) for runs over short documents (fewer distinct words a document than
# SHORT_DOCUMENT_WORDS on average) that make at least MANY_UPDATES minibatch updates; mean-field
# otherwise (README, "Choosing the local step"), but for LDA SVI (SHORT_RUN_CVB0), whose shorter
# runs over short documents, from FEW_UPDATES updates on, take CVB0 with SHORT_RUN_BURN_IN passes
# over each document before the one that gives its statistics, and tau = SHORT_RUN_TAU_SHARE x the
# run's updates (runs.default_step). From near-uniform topics, SCVB0's single burn-in pass
# leaves every document near uniform proportions, so the topics take the same share of every word
# and stay alike; and a delay of 64 would down-weight the whole of such a run. Below FEW_UPDATES
# every topic ended repeating another.
SHORT_DOCUMENT_WORDS = 64
MANY_UPDATES = 150
FEW_UPDATES = 20
ADAPTIVE_DEFAULT = {("lda", "svi"): ("meanfield", "cvb0"), ("hdp", "svi"): ("meanfield", "cvb0")}
SHORT_RUN_CVB0 = {("lda", "svi")}
SHORT_RUN_BURN_IN = 3
SHORT_RUN_TAU_SHARE = 1 / 16
# The HDP trained until it stops improving on a small corpus, one its passes read in fewer than
# MANY_UPDATES minibatches (FEW_UPDATES or more): CVB0 with tau = SMALL_CORPUS_TAU, on long
# documents too. Each minibatch is then a large share of the corpus, so the delay that damps a
# large corpus's first noisy minibatches only slows the run, and mean-field's run at tau 64 ended
# at the cap of passes still gaining, 0.04 nats behind the best LDA on the King James Bible's
# chapters and on whole man pages (benchmarks/results/hdp-small/). A run of given passes keeps
# the rules above: on the NYT, 3 passes of mean-field at tau 64 beat CVB0 at tau 1.
SMALL_CORPUS_CVB0 = {("hdp", "svi")}
SMALL_CORPUS_TAU = 1.0


def algorithm_names():
    return sorted({c.algorithm for c in MATRIX})


def local_names():
    return sorted(LOCAL_STEPS)


def cell(model, algorithm):
    """The matrix row of (model, algorithm), or a clear error."""
    for c in MATRIX:
        if c.model == model and c.algorithm == algorithm:
            return c
    accepted = ", ".join(c.algorithm for c in MATRIX if c.model == model)
    raise TopicscaleError(f"--algorithm {algorithm} is not available for --model {model} (choose from: {accepted})")


def resolve(path):
    module, attr = path.split(":")
    return getattr(importlib.import_module(module), attr)


def model_class(kind):
    return resolve(MODELS[kind].path)


def global_step_class(model, algorithm):
    return resolve(cell(model, algorithm).step.path)


def local_step_class(name):
    return resolve(LOCAL_STEPS[name].path)


def check_local(model, algorithm, local):
    """Refuse combinations outside the accepted matrix, saying which ones are accepted."""
    accepted = cell(model, algorithm).locals
    if local not in accepted:
        raise TopicscaleError(f"--local {local} does not go with --algorithm {algorithm} "
                              f"(accepted: {', '.join(accepted)})")


def build(cls, *args, settings=None, **kwargs):
    """cls(*args, **kwargs, **the settings named like cls's keyword arguments); the contract
    test checks that a class takes no fit option it does not own."""
    params = list(inspect.signature(cls).parameters)[len(args):]
    chosen = {k: v for k, v in (settings or {}).items()
              if k in params and k not in kwargs and v is not None}
    return cls(*args, **chosen, **kwargs)


def local_step_for(model):
    """The local step a model was trained with, built with its saved settings."""
    s = model.settings
    name = s.get("local") or cell(model.kind, s.get("algorithm", "svi")).locals[0]
    return build(local_step_class(name), settings=s)


def local_topics(local, model):
    """The topics (V x K) `local` runs on by default for `model`: its estep_topics."""
    return local.estep_topics(model)
