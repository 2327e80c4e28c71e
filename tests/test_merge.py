"""`fit --merge` (topicscale/merge.py): an HDP's repeating topics merged while the documents the
passes were scored on score them at least as high. The sticks that give merged weights, the
repeating pairs, the scorer against evaluate_exported and evaluate_topics, planted duplicates
merged and distinct topics left alone, and the options that refuse it."""
import json

import numpy as np
import pytest
from click.testing import CliRunner

from synthetic import lda_documents, planted_topics, write_corpus
from topicscale import merge as merging
from topicscale.cli import cli
from topicscale.coherence import repeated_pairs, repeated_topics
from topicscale.convergence import RowSample
from topicscale.evaluate import evaluate_exported, evaluate_topics
from topicscale.models import load_model
from topicscale.models.hdp import HDPModel, carrying, stick_weights, sticks_for_weights

ETA = 0.01


def test_sticks_for_weights_give_the_weights_and_keep_the_concentrations():
    rng = np.random.default_rng(0)
    a, b = rng.gamma(2.0, size=11), rng.gamma(5.0, size=11)
    w = rng.dirichlet(np.ones(12))
    w[4] = merging.FLOOR
    w /= w.sum()
    a2, b2 = sticks_for_weights(w, a, b)
    assert np.allclose(stick_weights(a2, b2), w, rtol=1e-12, atol=1e-15)
    assert (a2 > 0).all() and (b2 > 0).all()
    assert np.allclose(a2 + b2, a + b)


def test_repeated_pairs_share_more_than_half_and_count_as_repeated_topics():
    rng = np.random.default_rng(1)
    lam = rng.gamma(1.0, size=(300, 12))
    lam[:, 7] = lam[:, 2] * rng.uniform(0.9, 1.1, size=300)       # 7 repeats 2
    lam[:, 9] = lam[:, 2] * rng.uniform(0.9, 1.1, size=300)       # and 9 too
    pairs = repeated_pairs(lam, np.arange(12))
    assert {(a, b) for _, a, b in pairs} >= {(2, 7), (2, 9), (7, 9)}
    assert (2 * pairs[:, 0] > 10).all() and (pairs[:, 1] < pairs[:, 2]).all()
    assert list(pairs[:, 0]) == sorted(pairs[:, 0], reverse=True)
    assert repeated_topics(lam, np.arange(12)) == np.unique(pairs[:, 1:]).size >= 3
    assert not repeated_pairs(lam, np.array([0, 1, 2, 3])).size


@pytest.fixture(scope="module")
def duplicated(tmp_path_factory):
    """Five planted topics, documents drawn from them (the scored ones, rows 0..299 of a corpus),
    and an HDP model of ten topics: each planted topic estimated twice from its own sample of
    words, so topic k + 5 repeats topic k."""
    rng = np.random.default_rng(7)
    beta = planted_topics(5, 200, rng)
    corpus = write_corpus(tmp_path_factory.mktemp("merge") / "c", lda_documents(beta, 300, 60, 0.3, rng), 200)
    counts = np.concatenate([rng.multinomial(600, beta[k])[:, None] for k in list(range(5)) * 2], axis=1)
    weights = np.full(10, 0.1)
    a, b = sticks_for_weights(weights, np.ones(9), np.arange(9, 0, -1, dtype=float))
    model = HDPModel(lam=counts + ETA, a=a, b=b, alpha=1.0, omega=1.0, eta=ETA, vocab=corpus.vocab)
    return model, RowSample(corpus, np.arange(300))


def copy(model):
    return HDPModel(np.array(model.lam), model.a.copy(), model.b.copy(), model.alpha, model.omega, model.eta,
                    model.vocab)


def test_the_score_of_all_documents_is_the_common_fold_in_of_the_exported_topics(duplicated):
    model, documents = duplicated
    scores = merging.DocumentScores(documents, np.asarray(model.lam))
    got = scores.score_all(merging.carried(model.topic_weights()))
    assert got == pytest.approx(evaluate_exported(model, documents)["per_word_ll"], abs=1e-12)


def test_a_trial_merge_changes_the_score_by_what_the_common_fold_in_of_the_merged_topics_says(
        duplicated, monkeypatch):
    """With every document refolded (TOUCH 0), a trial's gain is the change in the documents' log
    likelihood under evaluate_topics of the merged topics with the round's alpha."""
    monkeypatch.setattr(merging, "TOUCH", 0.0)
    model, documents = duplicated
    lam = np.array(model.lam)
    topics = merging.carried(model.topic_weights())
    scores = merging.DocumentScores(documents, lam)
    before = scores.score_all(topics)
    gain, _ = scores.try_merge(lam, 1, 6, ETA)
    merged = lam.copy()
    merged[:, 1] += merged[:, 6] - ETA
    kept = topics[topics != 6]
    beta = (merged / merged.sum(axis=0))[:, kept].T
    after = evaluate_topics(np.ascontiguousarray(beta), documents, alpha=1.0 / topics.size)
    assert gain / after["heldout_tokens"] == pytest.approx(after["per_word_ll"] - before, abs=1e-10)
    assert gain > 0                      # the pooled estimate of a topic beats its two halves


def test_merge_joins_planted_duplicates_and_scores_no_lower(duplicated):
    model, documents = duplicated
    model = copy(model)
    before = evaluate_exported(model, documents)["per_word_ll"]
    lam0, w0 = np.array(model.lam), model.topic_weights()
    result = merging.Merge(documents, "the planted documents")(model)
    assert result["merged"] == 5
    assert result["scores"][0] == pytest.approx(before, abs=1e-12)
    assert result["scores"][1] == pytest.approx(evaluate_exported(model, documents)["per_word_ll"], abs=1e-12)
    assert result["scores"][1] > result["scores"][0]
    w = model.topic_weights()
    assert carrying(w, 0.99) == 5 and repeated_topics(np.asarray(model.lam), merging.carried(w)) == 0
    for k in range(5):                    # the pair's counts and weight in one of its two columns
        kept, gone = (k, k + 5) if w[k] > w[k + 5] else (k + 5, k)
        assert np.allclose(model.lam[:, kept], lam0[:, k] + lam0[:, k + 5] - ETA)
        assert np.allclose(model.lam[:, gone], ETA)
        assert w[kept] == pytest.approx(w0[k] + w0[k + 5], rel=1e-6)


def test_merge_leaves_distinct_topics_alone(duplicated):
    model, documents = duplicated
    distinct = HDPModel(np.array(model.lam[:, :5]), *sticks_for_weights(np.full(5, 0.2), np.ones(4),
                        np.arange(4, 0, -1, dtype=float)), 1.0, 1.0, ETA, model.vocab)
    lam = np.array(distinct.lam)
    result = merging.Merge(documents, "")(distinct)
    assert result["merged"] == 0 and "scores" not in result       # no pair repeats: nothing scored
    assert np.array_equal(distinct.lam, lam)


# ---------------------------------------------------------------- the command line
def test_fit_merges_an_hdp_by_default_towards_the_planted_topics(planted, tmp_path):
    """Ten planted topics, truncation 30: the passes leave every topic in use, most repeating
    another; the merges leave far fewer, and score the held-aside documents higher."""
    _, train, _ = planted
    summaries, models = [], []
    for name, extra in (("merged", []), ("unmerged", ["--no-merge"])):
        r = CliRunner().invoke(cli, ["fit", str(train.path), "--model", "hdp", "-k", "30", "-o", str(tmp_path / name),
                                     "--seed", "1", "--threads", "1", "--json", "-q", *extra])
        assert r.exit_code == 0, r.output
        summaries.append(json.loads(r.stdout.strip().splitlines()[-1]))
        models.append(load_model(tmp_path / name))
    merge = summaries[0]["merge"]
    assert merge["merged"] >= 5 and merge["scores"][1] >= merge["scores"][0]
    assert models[0].settings["merge"] is True and models[0].settings["merged"] == merge["merged"]
    assert "merge" not in summaries[1] and models[1].settings["merge"] is False
    merged, unmerged = (m.describe() for m in models)
    assert merged["effective_topics_99_tokens"] <= unmerged["effective_topics_99_tokens"] - 5
    assert summaries[0]["repeated_topics"] < summaries[1]["repeated_topics"]


def test_with_heldout_the_merges_are_scored_on_the_heldout_corpus_from_the_passes_score(planted, tmp_path):
    _, train, heldout = planted
    r = CliRunner().invoke(cli, ["fit", str(train.path), "--model", "hdp", "-k", "20", "--batch-size", "300",
                                 "--heldout", str(heldout.path), "--polish", "0", "-o", str(tmp_path / "m"),
                                 "--json", "-q"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout.strip().splitlines()[-1])
    merge = out["merge"]
    assert merge["merged"] >= 1 and merge["scored_on"] == out["scored_on"]
    assert merge["scores"][0] == pytest.approx(out["pass_scores"][-1], abs=1e-12)
    assert merge["scores"][1] == pytest.approx(evaluate_exported(load_model(tmp_path / "m"), heldout)["per_word_ll"],
                                               abs=1e-12)


@pytest.mark.parametrize("args, message", [
    (["--merge"], "--merge goes with --model hdp"),
    (["--model", "hdp", "--merge", "--passes", "1"], "--merge scores the merged topics"),
])
def test_merge_is_refused_where_it_cannot_apply(planted, tmp_path, args, message):
    _, train, _ = planted
    r = CliRunner().invoke(cli, ["fit", str(train.path), "-o", str(tmp_path / "m"), *args])
    assert r.exit_code != 0 and message in r.output
    assert not (tmp_path / "m").exists()
