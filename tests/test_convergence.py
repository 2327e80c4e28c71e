"""fit without --passes trains until a pass gains less than convergence.MIN_GAIN, at most
MAX_PASSES passes, and says why it stopped."""
import json

import numpy as np
import pytest

from clirun import run, run_stopped
from topicscale import convergence
from topicscale.evaluate import evaluate_model
from topicscale.inference.global_steps.svi import SVI
from topicscale.inference.local_steps.meanfield import MeanField
from topicscale.models import load_model
from topicscale.models.lda import LDAModel
from topicscale.train import RunLimits, RunState, train



def test_fit_without_passes_stops_at_the_first_pass_gaining_too_little(planted, tmp_path):
    _, corpus, _ = planted
    out = json.loads(run("fit", corpus.path, "-k", 10, "--batch-size", 300, "--polish", 0, "-o", tmp_path / "m",
                         "--json", "-q").stdout)
    scores = out["pass_scores"]
    aside = convergence.aside_rows(corpus, 0)                   # 3000 documents: 150 held aside
    assert out["stopped"] == "converged" and out["scored_on"] == "150 documents held aside from training"
    assert out["held_aside"] == aside.shape[0] == 150
    assert 2 <= len(scores) < convergence.MAX_PASSES
    assert convergence.stopped_converging(scores)
    assert not any(convergence.stopped_converging(scores[:n]) for n in range(len(scores)))
    assert out["docs"] == len(scores) * (corpus.n_docs - 150)       # a pass is over the documents kept
    # the last score is the saved model's on the documents held aside
    sample = convergence.RowSample(corpus, aside)
    assert evaluate_model(load_model(tmp_path / "m"), sample)["per_word_ll"] == scores[-1]
    events = [json.loads(line) for line in (tmp_path / "m" / "metrics.jsonl").read_text().splitlines()]
    assert [e["score"] for e in events if e["event"] == "pass_score"] == scores
    text = run("fit", corpus.path, "-k", 10, "--batch-size", 300, "-o", tmp_path / "m", "--force", "-q").output
    assert f"converged after {len(scores)} passes" in text and "150 documents held aside" in text


def test_a_corpus_less_the_documents_held_aside_streams_and_reads_the_rest(planted):
    """Every kept document once an epoch, none held aside, by its own row number; the counts are
    the kept documents'."""
    from topicscale.corpus.stream import MinibatchStream
    from topicscale.corpus.subset import CorpusWithout
    _, corpus, _ = planted
    aside = np.array([0, 5, 6, 700, 2999])
    kept = np.setdiff1d(np.arange(corpus.n_docs), aside)
    view = CorpusWithout(corpus, aside)
    assert view.n_docs == kept.shape[0]
    assert np.array_equal(view.kept_rows(np.arange(view.n_docs)), kept)
    whole = corpus.rows(kept)
    assert view.nnz == whole.indices.shape[0] and view.n_tokens == whole.n_tokens
    stream = MinibatchStream(view, 256, 3)
    dealt = [rows for _, (_, rows) in zip(range(stream.batches_per_epoch()), stream.positions())]
    assert np.array_equal(np.sort(np.concatenate(dealt)), kept)
    _, batch = next(stream())
    assert np.array_equal(batch.rows, dealt[0]) and np.array_equal(batch.indices, corpus.rows(dealt[0]).indices)
    assert np.array_equal(np.concatenate([b.rows for b in view.blocks(1000)]), kept)


@pytest.mark.parametrize("scores,stopped", [
    ([-8.0, -7.9], False),
    ([-8.0, -7.9, -7.8995, -7.92], True),          # two passes in a row short of the best by 0.002
    ([-8.0, -7.9, -7.95, -7.89], False),           # a loss, then a gain over the best: go on
    ([-8.0, -7.9, -7.95, -7.899], True),           # ... a gain over the last, not over the best
    ([-8.0, -7.9, -7.85, -7.84, -7.839, -7.8385], True),
])
def test_training_stops_when_two_passes_in_a_row_fail_to_beat_the_best(scores, stopped):
    assert convergence.stopped_converging(scores) == stopped


@pytest.mark.parametrize("scores,stopped", [
    ([-8.0, -7.9, -7.8995, -7.92], False),         # two passes short of the best: an HDP waits
    ([-8.0, -7.9, -7.8995, -7.92, -7.95], True),
    ([-8.0, -7.9, -7.8995, -7.92, -7.88], False),
])
def test_an_hdp_stops_when_three_passes_in_a_row_fail_to_beat_the_best(scores, stopped):
    assert convergence.patience("hdp") == 3 and convergence.patience("lda") == 2
    assert convergence.stopped_converging(scores, patience=convergence.patience("hdp")) == stopped


def test_fit_of_an_hdp_without_passes_waits_three_passes(planted, tmp_path):
    _, corpus, _ = planted
    args = ["fit", corpus.path, "--model", "hdp", "-k", 20, "--batch-size", 300, "--polish", 0, "--no-merge",
            "-o", tmp_path / "m"]
    scores = json.loads(run(*args, "--json", "-q").stdout)["pass_scores"]
    assert convergence.stopped_converging(scores, patience=3)
    assert not any(convergence.stopped_converging(scores[:n], patience=3) for n in range(len(scores)))
    assert f"converged after {len(scores)} passes: the last 3 did not beat" in run(*args, "--force", "-q").output


def test_a_small_corpus_holds_nothing_aside():
    class Sized:
        n_docs = 1999
    assert convergence.aside_rows(Sized(), 0) is None
    Sized.n_docs = 2000
    assert convergence.aside_rows(Sized(), 0).shape == (100,)
    Sized.n_docs = 10 ** 6
    rows = convergence.aside_rows(Sized(), 0)
    assert rows.shape == (1000,) and np.all(np.diff(rows) > 0)


@pytest.mark.parametrize("start", ["near-uniform", "assignment"])
def test_a_run_holding_documents_aside_resumes_to_the_model_of_an_uninterrupted_one(planted, tmp_path,
                                                                                   monkeypatch, start):
    _, corpus, _ = planted
    args = ["fit", corpus.path, "-k", 10, "--batch-size", 300, "--polish", 0, "--seed", 2, "--start", start]
    whole = json.loads(run(*args, "--json", "-q", "-o", tmp_path / "whole").stdout)
    r, _ = run_stopped(monkeypatch, 25, *args, "-o", tmp_path / "cut")        # in the third pass
    assert r.exit_code == 0 and "partial model" in r.output
    resumed = json.loads(run("fit", "--resume", tmp_path / "cut", "--json", "-q").stdout)
    assert resumed["pass_scores"] == whole["pass_scores"] and resumed["held_aside"] == 150
    assert (tmp_path / "cut" / "model.npz").read_bytes() == (tmp_path / "whole" / "model.npz").read_bytes()


def test_with_a_heldout_corpus_the_passes_are_scored_on_it(planted, tmp_path, monkeypatch):
    """... and once each: the run's final held-out evaluation is the last pass's score."""
    from topicscale import evaluate
    _, corpus, heldout = planted
    scored = []
    real = evaluate.evaluate_model
    monkeypatch.setattr(evaluate, "evaluate_model",
                        lambda model, documents, **kw: scored.append(documents) or real(model, documents, **kw))
    out = json.loads(run("fit", corpus.path, "-k", 10, "--batch-size", 300, "--heldout", heldout.path,
                         "--polish", 0, "-o", tmp_path / "m", "--json", "-q").stdout)
    assert out["scored_on"] == "the held-out corpus"
    assert out["pass_scores"][-1] == out["heldout"]["per_word_ll"]
    assert sum(getattr(d, "path", None) == heldout.path for d in scored) == len(out["pass_scores"])


def test_an_hdp_is_scored_by_the_common_fold_in_of_its_exported_topics(planted, tmp_path):
    """An HDP's passes are scored by what another tool would give its exported topics; its final
    held-out score is still eval's own predictive, computed anew."""
    from topicscale.evaluate import evaluate_exported
    _, corpus, heldout = planted
    out = json.loads(run("fit", corpus.path, "--model", "hdp", "-k", 20, "--batch-size", 300, "--heldout",
                         heldout.path, "--polish", 0, "--no-merge", "-o", tmp_path / "m", "--json", "-q").stdout)
    assert out["scored_on"] == "the held-out corpus (the common fold-in of the exported topics)"
    saved = load_model(tmp_path / "m")
    assert out["pass_scores"][-1] == evaluate_exported(saved, heldout)["per_word_ll"]
    assert out["heldout"]["protocol"] == "own"
    assert out["heldout"]["per_word_ll"] == evaluate_model(saved, heldout)["per_word_ll"] != out["pass_scores"][-1]


def test_passes_time_limit_and_max_docs_keep_their_meaning(planted, tmp_path):
    _, corpus, _ = planted
    out = json.loads(run("fit", corpus.path, "-k", 10, "--passes", 2, "-o", tmp_path / "a", "--json", "-q").stdout)
    assert out["docs"] == 2 * corpus.n_docs and out["stopped"] == "passes" and "pass_scores" not in out
    out = json.loads(run("fit", corpus.path, "-k", 10, "--max-docs", 1000, "-o", tmp_path / "b", "--json",
                         "-q").stdout)
    assert out["docs"] == 1000 and out["stopped"] == "max_docs"


def test_the_cap_stops_a_run_that_keeps_gaining(planted, tmp_path, monkeypatch):
    _, corpus, _ = planted
    monkeypatch.setattr(convergence, "MAX_PASSES", 2)
    monkeypatch.setattr(convergence, "MIN_GAIN", -1.0)        # every pass counts as a gain
    # near-uniform: two passes can leave repeats that would start the run over (test_start.py)
    result = run("fit", corpus.path, "-k", 10, "-o", tmp_path / "m", "--json", "-q", "--start", "near-uniform")
    out = json.loads(result.stdout)
    assert out["stopped"] == "passes" and len(out["pass_scores"]) == 2


def test_a_resumed_run_converges_where_an_uninterrupted_one_does(planted):
    _, corpus, _ = planted
    limits = RunLimits(batch_size=300, passes=convergence.MAX_PASSES, min_gain=convergence.MIN_GAIN)
    score = convergence.PassScorer(corpus, None, 0)

    def new():
        model = LDAModel.initial(corpus.vocab, 10, 0.1, 0.01, np.random.default_rng(0))
        return SVI(model, MeanField(), corpus.n_docs, tau=64.0, kappa=0.7)

    whole = new()
    summary, finished = train(whole, corpus, limits, 0, progress=False, score_pass=score)
    parts, state = new(), RunState()
    polls = iter(range(10 ** 6))
    stop_after_26 = lambda: next(polls) >= 26                        # as a signal would, mid-pass
    _, first_done = train(parts, corpus, limits, 0, progress=False, score_pass=score,
                          stop_requested=stop_after_26, state=state)
    assert finished and not first_done and 1 <= len(state.pass_scores) < len(summary["pass_scores"])
    resumed, done = train(parts, corpus, limits, 0, progress=False, score_pass=score, state=state)
    assert done and resumed["pass_scores"] == summary["pass_scores"]
    assert np.array_equal(parts.model.lam, whole.model.lam)
