"""Every fit option does what it says or is refused: a test generated from the declarations
(topicscale/options.py and the registry's matrix) over every model x algorithm x local step."""
import json
import math
import re
from pathlib import Path

import click
import numpy as np
import pytest
from click.testing import CliRunner

from synthetic import lda_documents, planted_topics, write_corpus
from topicscale import options, registry
from topicscale.cli import cli
from topicscale.models import store

ROOT = Path(__file__).resolve().parent.parent
CELLS = [(c.model, c.algorithm, local) for c in registry.MATRIX for local in c.locals]
# a value for each option that differs from what the base run (below) uses
CHANGED = {"n_topics": "3", "alpha": "0.3", "eta": "0.2", "omega": "5", "doc_truncation": "2", "kappa": "0.6",
           "tau": "2", "max_iter": "1", "tol": "0.5", "accelerate": None, "precision": "double",
           "estep_beta": "exp-elog", "batch_size": "30", "passes": "2", "max_docs": "20", "time_limit": "1e-6",
           "seed": "7", "chunk_docs": "7", "polish": "2", "start": "assignment"}
# options that must not change the model (each has its own test below), and those tested elsewhere
RUN_ONLY = {"threads", "heldout", "eval_every", "checkpoint_every", "checkpoint_seconds", "init_model",
            "report",                               # --report: tests/test_report.py
            "scheduler", "workers",                 # tests/test_dask.py
            "merge"}        # changes an HDP with repeating topics, which tiny's are not: tests/test_merge.py


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def arrays(folder):
    """The model's arrays (its parameters), not its metadata (which records the settings)."""
    _, data, _ = store.load(folder)
    return data


def same_model(a, b):
    x, y = arrays(a), arrays(b)
    return x.keys() == y.keys() and all(np.array_equal(x[k], y[k]) for k in x)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    rng = np.random.default_rng(11)
    beta = planted_topics(4, 40, rng)
    root = tmp_path_factory.mktemp("tiny")
    corpus = write_corpus(root / "train", lda_documents(beta, 60, 30, 0.3, rng), 40)
    heldout = write_corpus(root / "heldout", lda_documents(beta, 10, 30, 0.3, rng), 40)
    return corpus.path, heldout.path


def base_args(model, algorithm, local):
    """(No polish sweeps, whose fixed point on so small a corpus can hide a change before them,
    as can an HDP's sticks refit to the polished topics after them.)"""
    return (["--model", model, "--algorithm", algorithm, "--local", local, "-k", "4", "--batch-size", "20", "-q"]
            + (["--polish", "0"] if model in ("lda", "hdp") else []))


def test_every_declared_option_has_a_test_value():
    assert set(options.BY_NAME) == set(CHANGED) | RUN_ONLY


@pytest.mark.parametrize("cell", CELLS, ids="-".join)
def test_every_option_changes_the_model_or_is_refused(tiny, tmp_path, cell):
    corpus, _ = tiny
    base = tmp_path / "base"
    assert run("fit", corpus, *base_args(*cell), "-o", base).exit_code == 0
    owned = options.owned(*cell)
    for name, value in CHANGED.items():
        out = tmp_path / name
        args = base_args(*cell)
        flag = "-k" if name == "n_topics" else options.flag(name)
        if flag in args:                                 # replace the base run's value
            i = args.index(flag)
            del args[i:i + 2]
        if name == "max_docs" and cell[1] == "batch":    # a batch step needs a whole pass (60 documents)
            value = "70"
        given = [options.flag(name)] + ([] if value is None else [value])
        r = run("fit", corpus, *args, *given, "-o", out)
        part_option = options.BY_NAME[name] in options.PART_OPTIONS
        if part_option and name not in owned:
            assert r.exit_code == 2, (name, r.output)
            assert re.search(rf"{options.flag(name)} (goes with|does not go with)", r.output), r.output
            assert not out.exists()                      # refused before anything is written
        else:
            assert r.exit_code == 0, (name, r.output)
            assert not same_model(base, out), f"{options.flag(name)} {value} did not change the model"


def test_threads_do_not_change_the_model(tiny, tmp_path):
    corpus, _ = tiny
    for threads in ("1", "2"):
        assert run("fit", corpus, *base_args("lda", "svi", "meanfield"), "--threads", threads,
                   "-o", tmp_path / threads).exit_code == 0
    assert same_model(tmp_path / "1", tmp_path / "2")


def test_heldout_scores_and_eval_every_needs_it(tiny, tmp_path):
    corpus, heldout = tiny
    r = run("fit", corpus, "-k", "4", "--batch-size", "20", "--eval-every", "1", "-o", tmp_path / "m")
    assert r.exit_code == 2 and "--eval-every goes with --heldout" in r.output and not (tmp_path / "m").exists()
    r = run("fit", corpus, "-k", "4", "--batch-size", "20", "--heldout", heldout, "--eval-every", "1", "--passes", "1", "--json",
            "-o", tmp_path / "m")
    assert r.exit_code == 0 and json.loads(r.output)["heldout"]["per_word_ll"] < 0
    evals = [json.loads(line) for line in (tmp_path / "m" / "metrics.jsonl").read_text().splitlines()]
    assert sum(e["event"] == "eval" for e in evals) == 3


def test_an_option_in_a_preset_counts_as_given(tiny, tmp_path):
    corpus, _ = tiny
    preset = tmp_path / "p.toml"
    preset.write_text("omega = 3\n")
    r = run("fit", corpus, "--config", preset, "-o", tmp_path / "m")
    assert r.exit_code == 2 and "--omega goes with --model hdp" in r.output
    preset.write_text("max-iter = 100\n")                # the default value, still given: selects meanfield
    r = run("fit", corpus, "--config", preset, "--algorithm", "ssmf-a", "-k", "3", "--json", "-q", "-o", tmp_path / "m")
    assert r.exit_code == 0 and json.loads(r.output)["local"] == "meanfield"


@pytest.mark.parametrize("flags,local", [(["--precision", "double"], "meanfield"), (["--max-iter", "3"], "meanfield"),
                                         (["--tol", "0.01"], "meanfield"), ([], "gibbs")])
def test_an_option_of_one_local_step_selects_it(tiny, tmp_path, flags, local):
    corpus, _ = tiny
    r = run("fit", corpus, "--algorithm", "ssmf-a", "-k", "3", *flags, "--json", "-q", "-o", tmp_path / "m")
    assert r.exit_code == 0 and json.loads(r.output)["local"] == local


@pytest.mark.parametrize("name", sorted(set(options.BY_NAME) - set(options.RESUME_OPTIONS)))
def test_resume_refuses_every_option_but_threads(tiny, tmp_path, name):
    corpus, heldout = tiny
    out = tmp_path / "m"
    assert run("fit", corpus, "-k", "3", "--batch-size", "20", "-q", "-o", out).exit_code == 0
    value = {"heldout": heldout, "init_model": out, "eval_every": "1", "checkpoint_every": "1",
             "checkpoint_seconds": "1"}.get(name, CHANGED.get(name))
    r = run("fit", "--resume", out, options.flag(name), *([] if value is None else [value]))
    assert r.exit_code == 2 and f"{options.flag(name)} does not go with --resume" in r.output, r.output


@pytest.mark.parametrize("flags,message", [
    (["--tau", "0.5"], "--tau must be at least 1"),
    (["--kappa", "0.5"], "0.5<x<=1.0"),
    (["--algorithm", "batch", "--kappa", "0.7"], "--kappa goes with"),
    (["--local", "cvb0", "--accelerate"], "--accelerate goes with --local meanfield"),
    (["--doc-truncation", "3"], "--doc-truncation goes with --local hdp"),
    (["--algorithm", "ssmf", "--local", "meanfield", "--estep-beta", "mean"], "runs on sampled topics"),
    (["--model", "ctm", "--alpha", "0.1"], "--alpha goes with the models lda, hdp"),
])
def test_refusals_name_the_option_and_what_it_goes_with(tiny, tmp_path, flags, message):
    corpus, _ = tiny
    r = run("fit", corpus, *flags, "-o", tmp_path / "m")
    assert r.exit_code == 2 and message in r.output, r.output
    assert not (tmp_path / "m").exists()


def test_no_step_exceeds_one(tiny, tmp_path):
    corpus, _ = tiny
    for algorithm in ("svi", "ssmf-a", "scvb0"):
        out = tmp_path / algorithm
        assert run("fit", corpus, "--algorithm", algorithm, "--tau", "1", "-k", "3", "--batch-size", "20",
                   "--passes", "2", "-q", "-o", out).exit_code == 0
        rhos = [json.loads(line).get("rho") for line in (out / "metrics.jsonl").read_text().splitlines()]
        rhos = [r for r in rhos if r is not None]
        assert rhos and max(rhos) <= 1.0 and rhos[0] == pytest.approx(1.0)


@pytest.mark.parametrize("limit", [["--time-limit", "0.5"], ["--max-docs", "300"]])
def test_a_limit_without_passes_trains_until_the_limit(tiny, tmp_path, limit):
    corpus, _ = tiny
    r = run("fit", corpus, "-k", "3", "--batch-size", "20", *limit, "--json", "-q", "-o", tmp_path / "m")
    summary = json.loads(r.output)
    if limit[0] == "--time-limit":
        assert summary["train_seconds"] >= 0.5 and summary["docs"] > 60
    else:
        assert summary["docs"] == 300                    # five passes of 60 documents
    r = run("fit", corpus, "-k", "3", "--batch-size", "20", *limit, "--passes", "1", "--json", "-q", "-o",
            tmp_path / "one")
    assert json.loads(r.output)["docs"] == 60            # --passes still bounds it


def test_init_refuses_model_options_and_drops_the_old_local_steps_settings(tiny, tmp_path):
    corpus, _ = tiny
    first = tmp_path / "first"
    assert run("fit", corpus, "-k", "3", "--batch-size", "20", "--local", "meanfield", "--estep-beta", "mean",
               "-q", "-o", first).exit_code == 0
    r = run("fit", corpus, "--init", first, "-k", "3", "-o", tmp_path / "x")
    assert r.exit_code == 2 and "--topics does not go with --init" in r.output
    r = run("fit", corpus, "--init", first, "--alpha", "0.5", "-o", tmp_path / "x")
    assert r.exit_code == 2 and "--alpha does not go with --init" in r.output
    second = tmp_path / "second"
    assert run("fit", corpus, "--init", first, "--algorithm", "ssmf-a", "--local", "meanfield", "--batch-size", "20",
               "-q", "-o", second).exit_code == 0
    settings = json.loads(run("info", second, "--json").output)
    assert settings["local"] == "meanfield" and settings["algorithm"] == "ssmf-a" and "estep_beta" not in settings


def test_readme_tables_are_the_declarations():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    begin, end = "<!-- options: generated by topicscale.options.markdown_tables -->\n", "<!-- end options -->"
    assert begin in readme and end in readme
    assert readme.split(begin)[1].split(end)[0] == options.markdown_tables()


def test_fit_help_lists_the_matrix_and_where_each_option_applies():
    text = run("fit", "--help").output
    for line in options.matrix_lines():
        assert " ".join(line.split()) in " ".join(text.split())
    assert "Goes with --model hdp" in " ".join(text.split())


def test_svi_paper_preset_gives_the_papers_first_step(tiny, tmp_path):
    """The SVI paper's rho_t = (t + 1)^-0.9 counts t from 1: its first step is 2^-0.9."""
    corpus, _ = tiny
    out = tmp_path / "m"
    assert run("fit", corpus, "--config", "svi-paper", "-k", "3", "-q", "-o", out).exit_code == 0
    rho = [json.loads(line).get("rho") for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert rho[0] == pytest.approx(2 ** -0.9)


@pytest.mark.parametrize("command", ["fit", "eval", "prepare", "synth"])
def test_a_negative_seed_is_a_usage_error(tiny, tmp_path, command):
    """--seed -1 is refused before any work; the largest seed the kernels take trains and scores."""
    corpus, heldout = tiny
    (tmp_path / "in.txt").write_text("apple pear plum\npear plum fig\napple fig plum\n")
    big = str(2**63 - 1)
    assert run("fit", corpus, "-k", "2", "--passes", "1", "--seed", big, "-q", "-o", tmp_path / "big").exit_code == 0

    def args(out):
        return {"fit": ["fit", corpus, "-k", "2", "--passes", "1", "-q", "-o", out],
                "eval": ["eval", tmp_path / "big", heldout, "--fold-in", "gibbs"],
                "prepare": ["prepare", tmp_path / "in.txt", "--heldout", "1", "--min-df", "1", "-q", "-o", out],
                "synth": ["synth", tmp_path / "big", "-n", "3", "-o", out]}[command]
    result = run(*args(tmp_path / "no"), "--seed", "-1")
    assert result.exit_code == 2 and "'--seed': -1 is not in the range" in result.output
    assert not (tmp_path / "no").exists()
    assert run(*args(tmp_path / "ok"), "--seed", big).exit_code == 0


def options_of_type(kind, group=cli, path=()):
    """(command path, option) of every option of every command whose type is a `kind`."""
    for name, command in group.commands.items():
        if hasattr(command, "commands"):
            yield from options_of_type(kind, command, path + (name,))
            continue
        for param in command.params:
            if isinstance(param.type, kind):
                yield path + (name,), param


FLOAT_OPTIONS = list(options_of_type(click.types.FloatParamType))


def test_every_float_option_refuses_nan_and_infinity():
    """NaN and inf compare false with click.FloatRange's bounds; every float option of every
    command is `options.Finite`, which refuses them."""
    assert len(FLOAT_OPTIONS) >= 15
    for where, param in FLOAT_OPTIONS:
        assert isinstance(param.type, options.Finite), (where, param.name)
        for text in ("nan", "inf", "-inf"):
            with pytest.raises(click.BadParameter, match="not a finite number|not in the range"):
                param.type.convert(text, param, None)
        if param.type.min is None or (param.type.min == 0 and not param.type.min_open):      # 0 in range
            assert math.copysign(1.0, param.type.convert("-0", param, None)) == 1.0       # -0 is 0
        low = param.type.min if param.type.min is not None else 0.0
        assert param.type.convert(str(low + 0.5 if param.type.max is None else (low + param.type.max) / 2),
                                  param, None) > low


@pytest.mark.parametrize("flags", [["--passes", "nan"], ["--time-limit", "nan"], ["--tau", "inf"],
                                   ["--kappa", "nan"]])
def test_a_non_finite_number_is_refused_before_any_work(tiny, tmp_path, flags):
    """NaN or infinity, on the command line or in a preset, is a usage error before the output
    folder is made."""
    corpus, _ = tiny
    result = run("fit", corpus, "-k", "2", "-q", "-o", tmp_path / "m", *flags)
    assert result.exit_code == 2 and f"'{flags[0]}'" in result.output and "not a finite number" in result.output
    assert not (tmp_path / "m").exists()
    (tmp_path / "preset.toml").write_text(f"{flags[0][2:]} = {flags[1]}\n")
    result = run("fit", corpus, "-k", "2", "-q", "-o", tmp_path / "m", "--config", tmp_path / "preset.toml")
    assert result.exit_code != 0 and "not a finite number" in result.output and not (tmp_path / "m").exists()


def test_every_count_option_has_a_bound_the_kernels_take():
    """Every count option is bounded by int64 (a kernel's integers), and those that size arrays by
    SIZE_MAX, so that a huge value is a usage error rather than an overflow in a kernel or in
    numpy's array shapes."""
    found = list(options_of_type(click.IntRange))
    assert len(found) >= 20
    sized = {("fit", "n_topics"), ("fit", "doc_truncation"), ("fit", "max_iter"),
             ("classify fit", "max_iter"), ("classify fit", "samples"), ("classify fit", "iterations")}
    for where, param in found:
        assert param.type.max is not None and param.type.max <= options.INT64_MAX, (where, param.name)
        if (" ".join(where), param.name) in sized:
            assert param.type.max == options.SIZE_MAX, (where, param.name)
        with pytest.raises(click.BadParameter, match="not in the range"):
            param.type.convert(str(10**20), param, None)


def test_a_count_too_large_or_an_allocation_too_large_is_one_line(tiny, tmp_path, monkeypatch):
    corpus, _ = tiny
    result = run("fit", corpus, "-k", "2", "--max-iter", str(10**20), "-o", tmp_path / "m")
    assert result.exit_code == 2 and "'--max-iter'" in result.output and not (tmp_path / "m").exists()
    import topicscale.runs

    def too_big(*args, **kwargs):
        raise MemoryError("Unable to allocate 11.7 PiB for an array with shape (16438, 100000000000) "
                          "and data type float64")
    monkeypatch.setattr(topicscale.runs, "run_fit", too_big)
    result = CliRunner().invoke(cli, ["fit", str(corpus), "-k", "2000000000", "-o", str(tmp_path / "m")])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.output.strip() == ("topicscale: error: not enough memory: Unable to allocate 11.7 PiB for an "
                                     "array with shape (16438, 100000000000) and data type float64")
