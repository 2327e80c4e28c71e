"""The parameters of the scikit-learn estimators (topicscale/estimator.py), generated from the
declarations of `fit`'s options (options.py, registry.py), so that a new option reaches them.

An estimator of a model takes every option of `fit` that trains a model of that kind: the
`--algorithm` and `--local` selectors, the options some accepted algorithm and local step of
the model own, and the run options but those about the output of a run and where its local
steps run (EXCLUDED: --scheduler and --workers are `fit`'s; `-o`, `--resume`, `--force`,
`--config`, `--json` and `--quiet` are not declared options). Names are
the settings' Python names, K is `n_components` as in scikit-learn, and every default is None:
"not given", as on the command line, where the run's algorithm decides (e.g. SCVB0's paper
settings) and the declared defaults fill the rest. OWN are the estimators' parameters that no
option declares. Nothing here imports numba or scikit-learn.
"""
import inspect
import math
import numbers
import os
import re
import textwrap
from pathlib import Path

import click
import numpy as np

from . import options, registry

SELECTORS = ("algorithm", "local")
EXCLUDED = ("heldout", "eval_every", "checkpoint_every", "checkpoint_seconds", "report", "scheduler", "workers")
RENAMED = {"n_topics": "n_components"}
# parameters of the estimators alone: {name: description}
OWN = {"total_samples": (
    "partial_fit: the number of documents D of the corpus its calls stream, by which the stochastic "
    "global steps scale a minibatch's statistics (D/|S|), as in scikit-learn's "
    "LatentDirichletAllocation; kept in the model. Not with algorithm=batch; fit and fit_corpus "
    "take their corpus's. [default: the rows of each call's X]")}
MAX_ITER_NOTE = ("max_iter is the E-step cap (sweeps per document), not the number of passes "
                 "as in scikit-learn's LatentDirichletAllocation: passes are `passes`.")


def option_names(kind):
    """The fit options (settings' names) an estimator of model `kind` takes, in --help's order."""
    owned = set()
    for c in registry.MATRIX:
        if c.model == kind:
            for local in c.locals:
                owned |= options.owned(kind, c.algorithm, local)
    return (SELECTORS + tuple(o.name for o in options.PART_OPTIONS if o.name in owned)
            + tuple(o.name for o in options.RUN_OPTIONS if o.name not in EXCLUDED))


def param_name(option):
    """An option's estimator parameter: its setting's name, but K is n_components."""
    return RENAMED.get(option, option)


def param_names(kind):
    return tuple(param_name(o) for o in option_names(kind)) + tuple(OWN)


def make_init(kind):
    """An __init__ taking exactly the parameters of `kind` as keywords (all default None) and
    storing them unchanged, with that explicit signature (what scikit-learn's get_params reads)."""
    names = param_names(kind)

    def __init__(self, **params):
        unknown = sorted(set(params) - set(names))
        if unknown:
            raise TypeError(f"{type(self).__name__}() got unexpected keyword argument(s) "
                            f"{', '.join(unknown)} (it takes {', '.join(names)})")
        for name in names:
            setattr(self, name, params.get(name))

    __init__.__signature__ = inspect.Signature(
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        + [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=None) for n in names])
    __init__.__qualname__ = "__init__"
    return __init__


# ------------------------------------------------------------------------------ values
def check_value(option, value):
    """A given parameter's value checked by its option's declared type, as click would check
    it on the command line, and converted to a plain Python value; ValueError naming the
    parameter otherwise. Paths become absolute, as `fit` makes them."""
    declared = options.BY_NAME[option]
    kind = declared.type

    def refuse(why):
        return ValueError(f"{param_name(option)}={value!r}: {why}")

    if kind is None:                                   # an on/off flag
        if not isinstance(value, (bool, np.bool_)):
            raise refuse("must be True or False")
        return bool(value)
    if kind is int or isinstance(kind, click.types.IntParamType):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise refuse("must be a whole number")
        value = int(value)
    elif isinstance(kind, click.types.FloatParamType):
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
            raise refuse("must be a finite number")
        value = float(value)
    elif isinstance(kind, click.Choice):
        if not isinstance(value, str):
            raise refuse(f"must be one of {', '.join(kind.choices)}")
    elif isinstance(kind, click.Path):
        try:
            value = os.fspath(value)
        except TypeError:
            raise refuse("must be a path") from None
    if kind is not int:
        try:
            value = kind.convert(value, None, None)
        except click.BadParameter as exc:
            raise refuse(exc.message) from None
    if isinstance(kind, click.Path):
        value = str(Path(value).resolve())
    return value


def check_selector(kind, name, value):
    """--algorithm / --local: None or one of the names the registry knows (whether the model
    accepts it is checked with the other options, by options.check)."""
    known = registry.algorithm_names() if name == "algorithm" else registry.local_names()
    if value is not None and (not isinstance(value, str) or value not in known):
        raise ValueError(f"{name}={value!r}: must be one of {', '.join(known)}")
    return value


def fit_config(kind, params):
    """The `fit` configuration of an estimator's parameters: {setting: checked value or None},
    and total_samples."""
    config = {name: None for name in options.BY_NAME}
    for option in option_names(kind):
        value = params[param_name(option)]
        if option in SELECTORS:
            config[option] = check_selector(kind, option, value)
        elif value is not None:
            config[option] = check_value(option, value)
    config["total_samples"] = check_total_samples(params.get("total_samples"), config["algorithm"])
    return config


def check_total_samples(value, algorithm):
    """total_samples: None, or a positive number with a stochastic algorithm (batch updates
    once per pass over a whole corpus)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 < value < math.inf:
        raise ValueError(f"total_samples={value!r}: must be a positive number (the corpus's documents)")
    if algorithm == "batch":
        raise ValueError("total_samples goes with the stochastic algorithms: algorithm=batch updates "
                         "the topics once per pass over the whole corpus")
    return float(value)


FLAG = re.compile(r"--([a-z][a-z-]*)(?: ([a-z0-9][a-z0-9.+-]*))?")


def in_python_terms(message):
    """A message of the command line with its flags named as the parameters, and a flag's value
    (a number, auto, or one of its choices) as name=value."""
    names = {options.flag(name): param_name(name) for name in options.BY_NAME}
    names.update({"--model": "model", "--algorithm": "algorithm", "--local": "local"})
    words = {"--model": set(registry.MODELS), "--algorithm": set(registry.algorithm_names()),
             "--local": set(registry.local_names())}
    words.update({options.flag(o.name): set(o.type.choices) for o in options.BY_NAME.values()
                  if isinstance(o.type, click.Choice)})

    def python(match):
        flag, value = f"--{match.group(1)}", match.group(2)
        if flag not in names:
            return match.group(0)
        if value is not None and (value == "auto" or value in words.get(flag, ()) or _number(value)):
            return f"{names[flag]}={value}"
        return names[flag] + match.group(0)[len(flag):]
    return FLAG.sub(python, message)


def _number(text):
    try:
        float(text)
        return True
    except ValueError:
        return False


# ------------------------------------------------------------------------------ documentation
def describe(kind, option):
    """A parameter's description: the option's --help (what, where it applies, default)."""
    if option in SELECTORS:
        cells = [c for c in registry.MATRIX if c.model == kind]
        if option == "algorithm":
            return (f"Global step (`fit --algorithm`): {', '.join(c.algorithm for c in cells)}. "
                    "[default: svi]")
        rows = "; ".join(f"{c.algorithm}: {', '.join(c.locals)}" for c in cells)
        return (f"Local (per-document) step (`fit --local`), by algorithm: {rows}. [default: the "
                "algorithm's first, or the one its given options select, as `fit` chooses]")
    text = in_python_terms(options.help_text(options.BY_NAME[option]))
    return text + (" " + MAX_ITER_NOTE if option == "max_iter" else "")


def docstring(kind, summary):
    """The class docstring: `summary`, then every parameter with its --help text."""
    lines = [inspect.cleandoc(summary), "", "Parameters", "----------"]
    described = [(param_name(o), describe(kind, o)) for o in option_names(kind)] + list(OWN.items())
    for name, text in described:
        lines.append(f"{name} : default=None")
        lines += textwrap.wrap(text, 96, initial_indent="    ", subsequent_indent="    ")
    return "\n".join(lines) + "\n"
