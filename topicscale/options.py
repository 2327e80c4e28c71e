"""The options of `topicscale fit`, declared once: `fit --help`, the README's tables and the
validation of a run all read these declarations and the registry's (which part owns which).

An option is *given* when it is set to anything but None (on the command line or in a
`--config` preset: click's defaults are all None, and the defaults below are filled in by
runs.with_defaults after the check). `check` refuses, before anything is written, every given
option that no part of the run owns, with one line naming what the option goes with.
"""
import math
from dataclasses import dataclass

import click

from . import registry
from .errors import TopicscaleError

CHUNK_DOCS = 2000        # --chunk-docs' default, the rule's size (inference/chunks.py)


def numba_threads(threads):
    """The threads a run's kernels use: `threads`, or every core numba has when None; a number
    outside 1..cores is refused (ValueError saying the range)."""
    import numba
    available = numba.config.NUMBA_NUM_THREADS
    threads = available if threads is None else threads
    if not 1 <= threads <= available:
        raise ValueError(f"must be between 1 and {available} (cores available to numba)")
    return threads


@dataclass(frozen=True)
class Option:
    name: str                # the setting's name in a run's configuration and a model's settings
    flags: tuple             # click's parameter declarations
    type: object
    help: str
    default: object = None   # filled in when unset and owned by the run (None: the owner decides)
    default_text: str = ""   # the default as --help states it when it depends on the owner


class Finite(click.FloatRange):
    """click.FloatRange that refuses NaN and infinity too: they compare false with any bound, so
    FloatRange lets them through."""

    def convert(self, value, param, ctx):
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number + 0.0             # -0.0 is 0.0

    def _describe_range(self):
        return "finite" if self.min is None and self.max is None else super()._describe_range()


class OrAuto(click.ParamType):
    """A number, or "auto": a setting the run decides (--alpha, --eta: a prior it learns,
    inference/priors.py; --polish: polish.py)."""

    def __init__(self, name, parse, allowed, what):
        self.name, self.parse, self.allowed, self.what = name, parse, allowed, what

    def convert(self, value, param, ctx):
        if isinstance(value, str) and value.strip().lower() == "auto":
            return "auto"
        try:
            number = self.parse(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is neither {self.what} nor 'auto'", param, ctx)
        if not self.allowed(number):
            self.fail(f"{value!r} must be {self.what} (or 'auto')", param, ctx)
        return number


POSITIVE_OR_AUTO = OrAuto("float|auto", float, lambda x: 0 < x < float("inf"), "a finite number above 0")
COUNT_OR_AUTO = OrAuto("integer|auto", int, lambda n: n >= 0, "a whole number from 0")
INT64_MAX = 2**63 - 1       # a count the kernels and numpy take without overflow
SIZE_MAX = 2**31 - 1        # a count that sizes arrays (topics, iterations): larger gives a usage error
SEED = click.IntRange(0, INT64_MAX)   # numpy generators take any whole number from 0; kernels an int64


class Count(click.IntRange):
    """A whole number from `low` to `high`: without an upper bound click takes any Python int, and
    a kernel's int64 argument or numpy's array shape overflows (a traceback, not a usage error).
    --help shows the int64 bound as no bound."""

    def __init__(self, low, high=INT64_MAX):
        super().__init__(low, high)

    def _describe_range(self):
        return f"x>={self.min}" if self.max == INT64_MAX else super()._describe_range()


# ------------------------------------------------------------------------------ declarations
SCHEDULE = ("rho_t = (tau + t)^-kappa with t = 0 at the first minibatch (gensim's `offset` is tau; "
            "scikit-learn's `learning_offset` is tau - 1; the SVI paper's tau is tau - 1, as it counts "
            "t from 1)")
PART_OPTIONS = (
    Option("n_topics", ("-k", "--topics", "n_topics"), Count(1, SIZE_MAX),
           "Number of topics K (HDP: the corpus truncation).", default_text="100"),
    Option("alpha", ("--alpha",), POSITIVE_OR_AUTO,
           "Topic-proportion prior (HDP: document concentration). LDA: auto learns an asymmetric "
           "alpha (from 1/K, a Newton step each minibatch, batch: each epoch, on the documents' Dirichlets "
           "from a mean-field step).",
           default_text="1/K, HDP 1 (0.2 under a CVB0 step), or the algorithm's"),
    Option("eta", ("--eta",), POSITIVE_OR_AUTO,
           "Topic Dirichlet prior. LDA: auto learns it (a Newton step every 10 minibatches).", 0.01),
    Option("omega", ("--omega",), Finite(0, min_open=True),
           "Corpus concentration of the topic sticks.", 1.0),
    Option("doc_truncation", ("--doc-truncation",), Count(1, SIZE_MAX),
           "Document truncation T: topics one document can use.", 15),
    Option("kappa", ("--kappa",), Finite(0.5, 1.0, min_open=True),
           f"Forgetting rate, in (0.5, 1]: {SCHEDULE}.", 0.7, "0.7, or the algorithm's"),
    Option("tau", ("--tau",), Finite(0, min_open=True),
           "Delay: down-weights the first minibatches; at least 1, so that no step exceeds 1 "
           "(SCVB0: any tau > 0, its step is capped at 1).", 64.0,
           "64, or the algorithm's (scvb0 1000, ssmf 10, ssmf-a 1, the CTM's svi 1); a short LDA run's "
           "default cvb0 step: a sixteenth of its updates"),
    Option("max_iter", ("--max-iter",), Count(1, SIZE_MAX), "Cap on E-step sweeps per document.", 100),
    Option("tol", ("--tol",), Finite(0),
           "The E-step stops when the mean change of a document's parameters is below this.", 1e-3),
    Option("accelerate", ("--accelerate/--no-accelerate",), None,
           "SQUAREM-accelerated mean-field E-step: fewer sweeps per document (benchmarks/README.md).", False),
    Option("precision", ("--precision",), click.Choice(["single", "double"]),
           "Floating point of the mean-field E-step while training (topic rows and exp(E[log theta])); "
           "a document near float32's range is redone in double (double_docs in metrics.jsonl). "
           "gamma and the topics stay float64; eval and infer run in double.", "single"),
    Option("estep_beta", ("--estep-beta",), click.Choice(["exp-elog", "mean"]),
           "Topics the mean-field E-step multiplies by: mean = E[beta], CVB0's plug-in, which keeps rare "
           "words in their topics; exp-elog = exp(E[log beta]), the SVI paper's eq. 33.", "mean"),
    Option("start", ("--start",), click.Choice(["auto", "near-uniform", "assignment"]),
           "The topics training starts from: near-uniform (each entry Gamma(100, 1/100), online LDA's "
           "start) or assignment (the counts of every training token given a topic at random, as a "
           "collapsed Gibbs sampler starts; one more read of the corpus). With --polish, when the topics are "
           "many (each gets far fewer tokens than the vocabulary has words), assignment keeps them apart "
           "where the near-uniform start leaves most of them alike. Without --passes, assignment makes one "
           "pass and the polish's sweeps train on from there (--polish auto's run whatever their memory); "
           "from assignment the sweeps open with 20 at 20 x alpha. "
           "auto: near-uniform, but when fit trains until the model stops improving and polishes: "
           "assignment for 200 topics or more, and for long documents (mean-field's) read in 8 "
           "minibatches a pass or fewer (when the sweeps' numbers fit in memory, not on a "
           "cluster, and not with --alpha or --eta auto, which the sweeps do not learn), and a run from near-uniform that ends with a tenth of the topics or more repeating "
           "another starts over from assignment with the same settings (if those sweeps' numbers fit in "
           "memory).",
           "auto"),
    Option("polish", ("--polish",), COUNT_OR_AUTO,
           "Sweeps of over-relaxed batch collapsed variational Bayes (CVB0) over the whole corpus after "
           "the streamed passes: sharper, more coherent topics. Keeps K float32 numbers per distinct word "
           "of each document, in memory up to 4 GiB or half the memory available, else in a temporary file "
           "in the model folder; 0: none; "
           "auto: scored every 5 sweeps on the documents the passes were scored on (by a CVB0 fold-in "
           "under the model's prior; an HDP trained with the mean-field document step: as its passes), "
           "keeping the best-scoring topics (the passes' own when none beats them, but not an LDA's when "
           "a tenth of them or more repeat another); stops when two checks in a row gain under 0.002 nats "
           "a word a sweep over the best (at most 100; from assignment, at least 20); none when its "
           "numbers would exceed 4 GiB or half the memory available (except after the assignment start, "
           "given or started over from).",
           default_text="auto when fit trains until the model stops improving (no --passes, --max-docs, "
           "--time-limit or --init), else 0"),
    Option("merge", ("--merge/--no-merge",), None,
           "After the passes, before the polish (and again after its sweeps, if kept), merge topics that "
           "repeat each other (share more than half of their top 10 words) where the documents the passes "
           "were scored on (held aside, or --heldout's) that use them score the merged topic no lower, or "
           "every such pair when a tenth of the listed topics or more repeat another: fewer topics carry "
           "the weight, fewer are listed twice.",
           default_text="on when fit trains until the model stops improving (and no --init), else off"),
)
RUN_OPTIONS = (
    Option("batch_size", ("--batch-size",), Count(1), "Documents per minibatch S.", 500,
           "500, or the algorithm's paper's"),
    Option("passes", ("--passes",), Finite(0, min_open=True),
           "Passes over the corpus (fractions allowed).", default_text="until two passes in a row (an "
           "HDP's: three) gain under 0.002 nats a word over the best (scored on --heldout, else on one "
           "document in 20, at most 1000, held aside from training), at most 50; or until --time-limit "
           "/ --max-docs when one is given"),
    Option("max_docs", ("--max-docs",), Count(1),
           "Stop after the minibatch that reaches this many documents."),
    Option("time_limit", ("--time-limit",), Finite(0, min_open=True),
           "Stop after this many seconds of training."),
    Option("seed", ("--seed",), SEED, "Seed: same seed, same model, bit for bit.", 0),
    Option("threads", ("--threads",), int, "Threads for the E-step, 1 to the cores (the model does not depend on it); "
           "with --scheduler or --workers, the numba threads of each dask worker too.",
           default_text="all cores; a dask worker 1"),
    Option("chunk_docs", ("--chunk-docs",), Count(1),
           "Documents per chunk of a minibatch's local step, a dask worker's unit of work. The chunks are "
           "fixed by this count and their statistics added in chunk order, on one machine as on any number "
           "of workers, so the model does not depend on where they run (it changes with this count, in the "
           "rounding of the sums).", CHUNK_DOCS),
    Option("scheduler", ("--scheduler",), str,
           "Run the documents' work (fit's local steps, eval's and infer's fold-ins) on the dask cluster "
           "whose scheduler is at this address (e.g. tcp://HOST:8786; workers started with --nthreads 1, "
           "reading the corpus at the same path or URL); fit's global step stays here. Needs "
           "topicscale[dask]."),
    Option("workers", ("--workers",), Count(1),
           "Run the documents' work on a dask LocalCluster of this many worker processes on this machine. "
           "Needs topicscale[dask]."),
    Option("heldout", ("--heldout",), click.Path(exists=True, file_okay=False),
           "Held-out corpus scored during and after training (eval's default protocol). When fit "
           "trains until the model stops improving (no --passes, --time-limit, --max-docs), it also "
           "decides when to stop, the polish and the merges, in place of documents held aside from "
           "training: its final score is then not of unseen documents."),
    Option("eval_every", ("--eval-every",), Count(1), "Minibatches between held-out evaluations.",
           default_text="only at the end"),
    Option("checkpoint_every", ("--checkpoint-every",), Count(1), "Minibatches between checkpoints."),
    Option("checkpoint_seconds", ("--checkpoint-interval", "checkpoint_seconds"), Finite(0),
           "Seconds between checkpoints (0: only by --checkpoint-every).", 300.0),
    Option("init_model", ("--init", "init_model"), click.Path(exists=True, file_okay=False),
           "Continue training this model (same vocabulary; its priors and K are kept, and its local "
           "step unless --local is given; its step counter carried on)."),
    Option("report", ("--report",), click.Path(dir_okay=False),
           "Write the model's HTML report (`topicscale report`) to this file at the end of the run "
           "(needs topicscale[report])."),
)
BY_NAME = {o.name: o for o in PART_OPTIONS + RUN_OPTIONS}
# options a run may change on --resume (the rest come from the checkpoint)
RESUME_OPTIONS = ("threads", "report", "scheduler", "workers")
# the model options an --init model keeps (its own K and priors)
KEPT_BY_INIT = ("n_topics", "alpha", "eta", "omega")
# the model options --init refuses: those it keeps, and where its topics start (they are its own)
REFUSED_BY_INIT = KEPT_BY_INIT + ("start",)
# options that say where the local steps run (topicscale/distributed.py), never what is computed
CLUSTER_OPTIONS = ("scheduler", "workers")


def flag(name):
    """The option's long flag as a user types it (e.g. --max-iter)."""
    if name == "local":
        return "--local"
    long = [f for f in BY_NAME[name].flags if f.startswith("--")][0]
    return long.split("/")[0]


# ------------------------------------------------------------------------------ ownership
def owners(name):
    """Where an option applies, in words: 'the models lda, hdp', 'the local steps meanfield, hdp'."""
    models = [m for m, p in registry.MODELS.items() if name in p.options]
    steps = sorted({c.algorithm for c in registry.MATRIX if name in c.step.options})
    locals_ = [n for n, p in registry.LOCAL_STEPS.items() if name in p.options]
    parts = []
    if models:
        parts.append(("--model " if len(models) == 1 else "the models ") + ", ".join(models))
    if steps:
        parts.append(("--algorithm " if len(steps) == 1 else "the algorithms ") + ", ".join(steps))
    if locals_:
        parts.append(("--local " if len(locals_) == 1 else "the local steps ") + ", ".join(locals_))
    return " and ".join(parts)


def owned(model, algorithm, local):
    """The part options a run of this model, global step and local step owns."""
    c = registry.cell(model, algorithm)
    return ((set(registry.MODELS[model].options) | set(c.step.options)
             | set(registry.LOCAL_STEPS[local].options)) - set(c.step.refuses))


def given_flags(names):
    """The --flags, of the running click command's parameters `names`, that its command line
    sets (not a default, a config file or the environment)."""
    ctx = click.get_current_context()
    return [f"--{name.replace('_', '-')}" for name in names
            if ctx.get_parameter_source(name) == click.core.ParameterSource.COMMANDLINE]


def given_options(config):
    """The declared options a run's configuration sets (to anything but None)."""
    return {name for name in BY_NAME if config.get(name) is not None}


def select_local(config):
    """The local step a run gets without --local, when its given options choose one: an option
    owned by one of the accepted local steps only (e.g. --precision: meanfield) selects that
    step, as long as the default does not own it. None: the default applies."""
    if config.get("local"):
        return config["local"]
    c = registry.cell(config["model"], config["algorithm"])
    wanted = given_options(config) & {o for name in c.locals for o in registry.LOCAL_STEPS[name].options}
    default_owns = set(registry.LOCAL_STEPS[c.locals[0]].options)
    if not wanted or (wanted <= default_owns and (config["model"], config["algorithm"])
                      not in registry.ADAPTIVE_DEFAULT):
        return None
    fits = [name for name in c.locals if wanted <= set(registry.LOCAL_STEPS[name].options)]
    return fits[0] if len(fits) == 1 else None


def check(config):
    """Refuse (TopicscaleError, one line) every given option that does not apply to this run:
    one no part of the model x algorithm x local step owns, one the global step refuses, an
    option of the model with --init (the model keeps its own), --eval-every without --heldout,
    a step size above 1. config["local"] must be chosen already."""
    model, algorithm, local = config["model"], config["algorithm"], config["local"]
    registry.check_local(model, algorithm, local)
    c = registry.cell(model, algorithm)
    here = owned(model, algorithm, local)
    run = f"--model {model} --algorithm {algorithm} --local {local}"
    for name in sorted(given_options(config), key=list(BY_NAME).index):
        if name in c.step.refuses:
            raise TopicscaleError(f"{flag(name)} does not go with --algorithm {algorithm}: "
                                  f"{c.step.why_refused}")
        if name in BY_NAME and BY_NAME[name] in PART_OPTIONS and name not in here:
            raise TopicscaleError(f"{flag(name)} goes with {owners(name)}, not with {run}")
        if config.get("init_model") and name in REFUSED_BY_INIT:
            raise TopicscaleError(f"{flag(name)} does not go with --init (the model keeps its own)")
    for name in ("alpha", "eta"):
        if config.get(name) == "auto" and model != "lda":
            raise TopicscaleError(f"{flag(name)} auto goes with --model lda (learned priors are LDA's), "
                                  f"not with --model {model}")
    check_cluster(config)
    if config.get("eval_every") is not None and not config.get("heldout"):
        raise TopicscaleError("--eval-every goes with --heldout (it schedules held-out evaluations)")
    tau = config.get("tau")
    if tau is not None and tau < 1 and algorithm != "scvb0":
        raise TopicscaleError(f"--tau {tau:g} would make the first step size tau^-kappa exceed 1: "
                              "--tau must be at least 1 (rho_t = (tau + t)^-kappa, t = 0 at the first minibatch)")


def check_cluster(config):
    """--scheduler (a cluster that runs) and --workers (one started here) exclude each other."""
    if config.get("scheduler") is not None and config.get("workers") is not None:
        raise TopicscaleError("--scheduler and --workers do not go together: --scheduler runs on an "
                              "existing dask cluster, --workers starts one on this machine")


def check_resume(config):
    """--resume continues with its checkpoint's settings: only RESUME_OPTIONS may be given
    (besides --json and --quiet, which change only what is printed)."""
    selectors = [f"--{name}" for name in ("model", "algorithm", "local", "force") if config.get(name)]
    extra = selectors + [flag(n) for n in sorted(given_options(config) - set(RESUME_OPTIONS),
                                                  key=list(BY_NAME).index)]
    if extra:
        raise TopicscaleError(f"{extra[0]} does not go with --resume (the run continues with the "
                              f"settings in its checkpoint; only {', '.join(map(flag, RESUME_OPTIONS))} "
                              "may change)")


# ------------------------------------------------------------------------------ documentation
def help_text(option):
    """An option's --help: what it does, where it applies, its default."""
    where = owners(option.name) if option in PART_OPTIONS else ""
    default = option.default_text or (None if option.default is None else option.default)
    if isinstance(default, bool):
        default = "on" if default else "off"
    return (option.help + (f" Goes with {where}." if where else "")
            + (f"  [default: {default}]" if default is not None else ""))


def matrix_lines():
    """The accepted model x algorithm x local-step combinations, one line per row."""
    return [f"--model {c.model} --algorithm {c.algorithm:<7} --local {' | '.join(c.locals)}"
            for c in registry.MATRIX]


def markdown_tables():
    """The README's matrix and option tables (tests/test_options.py keeps the README equal to it)."""
    lines = ["| --model | --algorithm | --local (default first) | options of the model and steps |",
             "|---|---|---|---|"]
    for c in registry.MATRIX:
        locals_ = ", ".join(f"`{n}`" + (" (auto)" if (c.model, c.algorithm) in registry.ADAPTIVE_DEFAULT
                                        and n in registry.ADAPTIVE_DEFAULT[(c.model, c.algorithm)] else "")
                            for n in c.locals)
        opts = sorted(set().union(*(owned(c.model, c.algorithm, n) for n in c.locals)),
                      key=list(BY_NAME).index)
        lines.append(f"| `{c.model}` | `{c.algorithm}` | {locals_} | {' '.join(f'`{flag(o)}`' for o in opts)} |")
    lines += ["", "| option | goes with | default |", "|---|---|---|"]
    for o in PART_OPTIONS:
        default = o.default_text or o.default
        lines.append(f"| `{flag(o.name)}` | {owners(o.name)} | {default} |")
    return "\n".join(lines) + "\n"
