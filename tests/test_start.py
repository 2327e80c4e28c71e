"""fit --start assignment: topics that start from a random assignment of the training tokens."""
import json

import numpy as np
import pytest

from clirun import run, run_stopped
from synthetic import lda_documents, planted_topics, write_corpus
from topicscale.coherence import model_repeats
from topicscale.inference.start import assigned_topics
from topicscale.models import load_model


def word_totals(corpus):
    totals = np.zeros(corpus.n_words)
    for block in corpus.blocks():
        np.add.at(totals, block.indices, block.counts)
    return totals


def test_every_token_is_assigned_once_and_the_topics_share_them_evenly(planted):
    _, corpus, _ = planted
    K, eta = 7, 0.25                   # exact in binary: lam - eta gives the counts back
    lam = assigned_topics(corpus, K, eta, seed=3)
    counts = lam - eta
    assert np.array_equal(counts, np.round(counts)) and counts.min() == 0
    assert np.array_equal(counts.sum(axis=1), word_totals(corpus))
    n = corpus.n_tokens
    assert np.all(np.abs(counts.sum(axis=0) - n / K) < 5 * np.sqrt(n / K))     # binomial spread
    assert np.array_equal(lam, assigned_topics(corpus, K, eta, seed=3))
    assert not np.array_equal(lam, assigned_topics(corpus, K, eta, seed=4))


@pytest.fixture(scope="module")
def many_topics(tmp_path_factory):
    """200 topics over 8,000 words, each half a shared Zipf background, and 3,000 documents of
    10 tokens: 150 tokens a topic, far fewer than the words."""
    rng = np.random.default_rng(3)
    V, K = 8000, 200
    background = 1.0 / np.arange(1, V + 1)
    beta = 0.5 * planted_topics(K, V, rng) + 0.5 * background / background.sum()
    return write_corpus(tmp_path_factory.mktemp("many") / "c", lda_documents(beta, 3000, 10, 0.1, rng), V), K


def test_assignment_keeps_many_topics_apart_where_the_near_uniform_start_repeats_them(many_topics, tmp_path):
    corpus, K = many_topics
    repeats = {}
    for start in ("near-uniform", "assignment"):
        run("fit", corpus.path, "-k", K, "--start", start, "--passes", 2, "--polish", 20, "--seed", 0, "-q",
            "-o", tmp_path / start)
        m = load_model(tmp_path / start)
        assert m.settings["start"] == start
        repeats[start] = model_repeats(m)
    assert repeats["near-uniform"] > 10 and repeats["assignment"] == 0


def test_the_start_reads_only_the_training_documents(planted, tmp_path, monkeypatch):
    """Without --passes the run holds documents aside to score its passes; the start assigns the
    tokens of the others only."""
    from topicscale import runs
    from topicscale.inference import start
    _, corpus, _ = planted
    seen = []

    def recording(training, *args):
        seen.append(training)
        return assigned_topics(training, *args)

    def building(model, *args):
        trained_from.append(np.array(model.lam))
        return real_build(model, *args)

    trained_from, real_build = [], runs.build_algorithm
    monkeypatch.setattr(start, "assigned_topics", recording)
    monkeypatch.setattr(runs, "build_algorithm", building)
    r = run("fit", corpus.path, "-k", 5, "--start", "assignment", "--polish", 0, "--seed", 1, "--json", "-q",
            "-o", tmp_path / "m")
    held_aside = json.loads(r.stdout.splitlines()[-1])["held_aside"]
    (training,) = seen
    assert held_aside > 0 and training.n_docs == corpus.n_docs - held_aside
    kept = word_totals(training)
    assert kept.sum() == training.n_tokens < corpus.n_tokens
    (lam,) = trained_from                                   # the passes start from the assignment
    assert np.array_equal(lam, assigned_topics(training, 5, 0.01, 1))
    assert np.array_equal((lam - 0.01).sum(axis=1).round(), kept)


def test_without_passes_the_assignment_start_trains_one_pass_then_by_the_sweeps(planted, tmp_path, monkeypatch):
    """Trained until it stops improving, the assignment start makes one streamed pass and leaves
    the rest to the auto sweeps, which it runs even where the default would skip them for their
    memory (in a file then); with --polish 0 the passes go on until they stop improving."""
    from topicscale import polish
    _, corpus, _ = planted
    monkeypatch.setattr(polish, "RESIDENT_BYTES", 0)
    monkeypatch.setattr(polish, "available_memory", lambda: None)
    fit = lambda out, *more: run("fit", corpus.path, "-k", 10, "--seed", 0, "--json", *more, "-o", tmp_path / out)
    r = fit("a", "--start", "assignment")
    summary = json.loads(r.stdout.splitlines()[-1])
    assert summary["docs"] == corpus.n_docs - summary["held_aside"] and summary["start"] == "assignment"
    assert summary["polish"]["sweeps"] >= polish.CHECK_SWEEPS and summary["polish"]["kept"] > 0
    assert "pass_scores" not in summary         # its one pass has no next pass to decide
    from topicscale.cli import _convergence_line
    assert _convergence_line(summary).startswith("one pass from the assignment start")
    skipped = json.loads(fit("n").stdout.splitlines()[-1])["polish"]
    assert skipped["sweeps"] == 0 and "more memory than the default allows" in skipped["skipped"]
    passes = json.loads(fit("p", "--start", "assignment", "--polish", 0).stdout.splitlines()[-1])
    assert passes["docs"] > 2 * (corpus.n_docs - passes["held_aside"]) and "polish" not in passes


def test_start_goes_with_lda_and_not_with_init(planted, tmp_path):
    _, corpus, _ = planted
    r = run("fit", corpus.path, "--model", "hdp", "--start", "assignment", "-o", tmp_path / "h", ok=False)
    assert r.exit_code == 2 and "--start goes with" in r.output and not (tmp_path / "h").exists()
    run("fit", corpus.path, "-k", 5, "--passes", 1, "-q", "-o", tmp_path / "m")
    r = run("fit", corpus.path, "--init", tmp_path / "m", "--start", "assignment", "--passes", 1,
            "-o", tmp_path / "m2", ok=False)
    assert r.exit_code == 2 and "--start does not go with --init" in r.output


def test_a_model_continued_by_init_keeps_the_start_it_had(planted, tmp_path):
    _, corpus, _ = planted
    run("fit", corpus.path, "-k", 5, "--start", "assignment", "--passes", 1, "-q", "-o", tmp_path / "m")
    run("fit", corpus.path, "--init", tmp_path / "m", "--passes", 0.5, "-q", "-o", tmp_path / "m2")
    assert load_model(tmp_path / "m2").settings["start"] == "assignment"


def test_partial_fit_refuses_the_assignment_start():
    from topicscale import LDA
    X = np.ones((4, 6))
    with pytest.raises(ValueError, match="partial_fit refuses"):
        LDA(n_components=2, start="assignment").partial_fit(X)


def test_auto_starts_many_topics_from_the_assignment(many_topics, tmp_path, monkeypatch):
    """The default start (auto) with runs.MANY_TOPICS topics or more, trained until the model stops
    improving, whose sweeps fit in memory: the assignment start from the outset, the model
    `--start assignment` fits with the same local step; near-uniform with fewer topics, --passes,
    or sweeps that would not fit in memory."""
    from topicscale import polish, runs
    corpus, K = many_topics
    said = "training from a random assignment"

    def fit(out, *more):
        r = run("fit", corpus.path, "-k", K, "--seed", 0, "--json", "-q", *more, "-o", tmp_path / out)
        return json.loads(r.stdout.splitlines()[-1]), r.output

    auto, output = fit("auto")
    assert said in output and auto["start"] == "assignment" and "started_over" not in auto
    fit("assignment", "--start", "assignment", "--local", auto["local"])
    assert ((tmp_path / "auto" / "model.npz").read_bytes()
            == (tmp_path / "assignment" / "model.npz").read_bytes())
    fixed, output = fit("fixed", "--passes", 2, "--polish", 5)
    assert said not in output and fixed["start"] == "near-uniform"
    with monkeypatch.context() as m:
        m.setattr(polish, "RESIDENT_BYTES", 0)
        m.setattr(polish, "available_memory", lambda: None)
        _, output = fit("no-memory")
        assert said not in output
    monkeypatch.setattr(runs, "MANY_TOPICS", K + 1)
    _, output = fit("fewer")
    assert said not in output


def test_auto_starts_over_from_the_assignment_when_the_topics_end_repeating(many_topics, tmp_path, monkeypatch):
    """The default start (auto): the near-uniform start's passes leave a tenth of the topics or
    more repeating and their sweeps are skipped (as for their memory at K=1000 on GCIDE), so fit
    starts over from the assignment start, whose model is the one `--start assignment` fits with
    the same local step; `--start near-uniform`, `--init`, and `--passes` keep the repeats, and
    so does auto when the assignment start's sweeps would not fit in memory. (Below
    runs.MANY_TOPICS: from there auto starts from the assignment.)"""
    from topicscale import polish, runs
    corpus, K = many_topics
    monkeypatch.setattr(polish, "RESIDENT_BYTES", 0)
    monkeypatch.setattr(runs, "MANY_TOPICS", K + 1)
    fit = lambda out, *more: json.loads(run("fit", corpus.path, "-k", K, "--seed", 0, "--json", "-q", *more,
                                            "-o", tmp_path / out).stdout.splitlines()[-1])
    auto = fit("auto")
    first = auto["started_over"]
    assert first["repeated_topics"] >= K // 10 and "more memory" in first["polish"]["skipped"]
    assert auto["start"] == "assignment" and auto["repeated_topics"] < K // 10
    assert auto["train_seconds"] > first["train_seconds"] > 0 and first["docs"] > corpus.n_docs
    assert auto["docs"] == first["docs"] + corpus.n_docs - auto["held_aside"]     # both runs' documents
    assert auto["batches"] > first["batches"] > 0 and auto["wall_seconds"] >= auto["train_seconds"]
    assert load_model(tmp_path / "auto").settings["start"] == "assignment"
    events = [json.loads(line)["event"] for line in open(tmp_path / "auto" / "metrics.jsonl")]
    assert events.count("start_over") == 1 and events[-1] == "summary" and events.count("summary") == 1
    fit("assignment", "--start", "assignment", "--local", auto["local"])     # the run's settings kept
    assert ((tmp_path / "auto" / "model.npz").read_bytes()
            == (tmp_path / "assignment" / "model.npz").read_bytes())

    near = fit("near", "--start", "near-uniform")
    assert "started_over" not in near and near["repeated_topics"] == first["repeated_topics"]
    assert load_model(tmp_path / "near").settings["start"] == "near-uniform"
    continued = json.loads(run("fit", corpus.path, "--init", tmp_path / "near", "--polish", "auto", "--seed", 0,
                               "--json", "-q", "-o", tmp_path / "continued").stdout.splitlines()[-1])
    assert "started_over" not in continued and continued["start"] == "near-uniform"
    fixed = fit("fixed", "--passes", 2, "--polish", 5)
    assert "started_over" not in fixed and fixed["repeated_topics"] >= K // 10
    monkeypatch.setattr(polish, "available_memory", lambda: None)      # the sweeps would go to a file
    kept = fit("kept")
    assert "started_over" not in kept and kept["start"] == "near-uniform"
    assert kept["repeated_topics"] == first["repeated_topics"]


def test_a_run_stopped_after_starting_over_resumes_to_the_same_model(many_topics, tmp_path, monkeypatch):
    from topicscale import polish, runs
    corpus, K = many_topics
    monkeypatch.setattr(polish, "RESIDENT_BYTES", 0)
    monkeypatch.setattr(runs, "MANY_TOPICS", K + 1)
    args = ["fit", corpus.path, "-k", K, "--seed", 0]
    _, first_polls = run_stopped(monkeypatch, 10 ** 9, *args, "--start", "near-uniform", "-o", tmp_path / "near")
    run(*args, "-q", "-o", tmp_path / "whole")
    r, _ = run_stopped(monkeypatch, first_polls + 2, *args, "-o", tmp_path / "cut")
    assert r.exit_code == 0 and "partial model" in r.output
    from topicscale.runs import _load_checkpoint
    _, config, *_ = _load_checkpoint(tmp_path / "cut")
    assert config["start"] == "assignment" and config["started_over"]      # stopped in the second run
    resumed = json.loads(run("fit", "--resume", tmp_path / "cut", "--json", "-q").stdout.splitlines()[-1])
    assert resumed["start"] == "assignment" and resumed["started_over"]["repeated_topics"] >= K // 10
    assert (tmp_path / "cut" / "model.npz").read_bytes() == (tmp_path / "whole" / "model.npz").read_bytes()


def test_auto_starts_a_small_corpus_of_long_documents_from_the_assignment(tmp_path):
    """The default start with long documents (mean-field's) that a pass reads in runs.FEW_MINIBATCHES
    minibatches or fewer: the assignment start, the model `--start assignment` fits; near-uniform
    when the same corpus takes more minibatches a pass, or with short documents."""
    from topicscale import registry
    rng = np.random.default_rng(7)
    beta = planted_topics(10, 400, rng)
    long_docs = write_corpus(tmp_path / "long-corpus", lda_documents(beta, 600, 300, 0.2, rng), 400)
    short_docs = write_corpus(tmp_path / "short-corpus", lda_documents(beta, 600, 20, 0.2, rng), 400)
    assert long_docs.nnz >= registry.SHORT_DOCUMENT_WORDS * long_docs.n_docs > short_docs.nnz
    said = "long documents read in 2 minibatches a pass: training from a random assignment"

    def fit(corpus, out, *more):
        r = run("fit", corpus.path, "-k", 5, "--seed", 0, "--json", "-q", "--batch-size", 300, *more,
                "-o", tmp_path / out)
        return json.loads(r.stdout.splitlines()[-1]), r.output

    auto, output = fit(long_docs, "auto")
    assert said in output and auto["start"] == "assignment"
    fit(long_docs, "assignment", "--start", "assignment")
    assert (tmp_path / "auto" / "model.npz").read_bytes() == (tmp_path / "assignment" / "model.npz").read_bytes()
    many, output = fit(long_docs, "many", "--batch-size", 60)          # ten minibatches a pass
    assert "random assignment" not in output and many["start"] == "near-uniform"
    short, output = fit(short_docs, "short")
    assert "random assignment" not in output and short["start"] == "near-uniform"
    # learned priors: the sweeps from the assignment start would keep them fixed
    learned, output = fit(long_docs, "learned", "--eta", "auto", "--alpha", "auto")
    assert "random assignment" not in output and learned["start"] == "near-uniform"
    assert learned["learned_priors"] == ["alpha", "eta"]
    assert load_model(tmp_path / "learned").eta != load_model(tmp_path / "auto").eta
    refused = run("fit", long_docs.path, "-k", 5, "--eta", "auto", "--start", "assignment", "-o", tmp_path / "r",
                  ok=False)
    assert refused.exit_code == 2 and "--eta auto learn the priors in the streamed passes" in refused.output
    assert not (tmp_path / "r").exists()
    run("fit", long_docs.path, "-k", 5, "--eta", "auto", "--start", "assignment", "--polish", "0", "-q",
        "-o", tmp_path / "r")
