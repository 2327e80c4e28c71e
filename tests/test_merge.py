"""`fit --merge` (topicscale/merge.py): an HDP's repeating topics merged while the documents the
passes were scored on score them at least as high. The sticks that give merged weights, the
repeating pairs, the scorer against evaluate_exported and evaluate_topics, planted duplicates
merged and distinct topics left alone, and the options that refuse it."""
import json
import warnings

import numpy as np
import pytest
import scipy.sparse
from click.testing import CliRunner

from synthetic import lda_documents, planted_topics, write_corpus
from topicscale import merge as merging
from topicscale.cli import cli
from topicscale.coherence import largest_per_column, model_repeats, repeated_pairs, repeated_topics
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


def test_sticks_for_weights_stay_finite_where_the_weights_halve_to_nothing():
    """An HDP's unused topics keep sticks near (1, omega): their weights halve topic by topic,
    far below the rounding of 1 - sum of the others. A merge must not turn them into NaN."""
    K = 150
    a, b = np.ones(K - 1), np.ones(K - 1)
    a[:30], b[:30] = 50.0, 50.0 * np.arange(30, 0, -1)
    w = stick_weights(a, b)
    assert w[-1] < 1e-30
    w[7] += w[3] - merging.FLOOR
    w[3] = merging.FLOOR
    a2, b2 = sticks_for_weights(w, a, b)
    from topicscale.models.hdp import stick_expectations
    weights, elog_sigma = stick_expectations(a2, b2)
    assert np.isfinite(elog_sigma).all() and (a2 > 0).all() and (b2 > 0).all()
    assert np.allclose(weights, w, rtol=1e-9, atol=0)            # each weight to its own precision


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


@pytest.mark.parametrize("seed", range(4))
def test_repeated_pairs_are_those_of_a_pairwise_comparison_in_their_order(seed):
    """Every pair of topics compared by their top-10 sets (the slow way): the same pairs, the same
    shared counts, most shared first and then by topic numbers; a few words shared by many topics
    (ties in the top words included) and a subset of the topics in any order."""
    rng = np.random.default_rng(seed)
    V, K = 40, 30
    lam = rng.gamma(0.3, size=(V, K)).round(1) + 0.01          # rounded: ties among the top words
    lam[:6] += rng.gamma(2.0, size=(6, K))                      # frequent words in most topics
    topics = rng.permutation(K)[:25]
    top = largest_per_column(lam, 10)
    expected = sorted(((len(set(top[:, a]) & set(top[:, b])), min(a, b), max(a, b))
                       for i, a in enumerate(topics) for b in topics[i + 1:]
                       if 2 * len(set(top[:, a]) & set(top[:, b])) > 10),
                      key=lambda r: (-r[0], r[1], r[2]))
    assert len(expected) > 5 and repeated_pairs(lam, topics).tolist() == [list(r) for r in expected]


def test_a_vocabulary_of_fewer_than_twice_the_top_words_has_no_repeats():
    lam = np.random.default_rng(0).gamma(1.0, size=(19, 5))
    assert repeated_pairs(lam, np.arange(5)).shape == (0, 3) and repeated_topics(lam, np.arange(5)) == 0
    assert repeated_pairs(np.vstack([lam, lam[:1]]), np.arange(5)).size  # 20 words: top 10 of each overlap


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
    got = scores.score_all(model.display_order(False))
    assert got == pytest.approx(evaluate_exported(model, documents)["per_word_ll"], abs=1e-12)


def test_a_trial_merge_changes_the_score_by_what_the_common_fold_in_of_the_merged_topics_says(
        duplicated, monkeypatch):
    """With every document refolded (TOUCH 0), a trial's gain is the change in the documents' log
    likelihood under evaluate_topics of the merged topics with the round's alpha."""
    monkeypatch.setattr(merging, "TOUCH", 0.0)
    model, documents = duplicated
    lam = np.array(model.lam)
    topics = model.display_order(False)
    scores = merging.DocumentScores(documents, lam)
    before = scores.score_all(topics)
    gain, _ = scores.try_merge(1, 6, ETA)
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
    model.residual = np.arange(1.0, 11.0)          # what is left of initial topics moves with the counts
    before = evaluate_exported(model, documents)["per_word_ll"]
    lam0, w0 = np.array(model.lam), model.topic_weights()
    result = merging.Merge(documents, "the planted documents")(model)
    assert result["merged"] == 5
    assert result["scores"][0] == pytest.approx(before, abs=1e-12)
    assert result["scores"][1] == pytest.approx(evaluate_exported(model, documents)["per_word_ll"], abs=1e-12)
    assert result["scores"][1] > result["scores"][0]
    w = model.topic_weights()
    assert carrying(w, 0.99) == 5 and repeated_topics(np.asarray(model.lam), model.display_order(False)) == 0
    for k in range(5):                    # the pair's counts and weight in one of its two columns
        kept, gone = (k, k + 5) if w[k] > w[k + 5] else (k + 5, k)
        assert np.allclose(model.lam[:, kept], lam0[:, k] + lam0[:, k + 5] - ETA)
        assert np.allclose(model.lam[:, gone], ETA)
        assert w[kept] == pytest.approx(w0[k] + w0[k + 5], rel=1e-6)
        assert (model.residual[kept], model.residual[gone]) == (2.0 * k + 7.0, 0.0)


def test_a_trial_refolds_only_the_documents_that_use_the_two_topics_and_misses_little(duplicated):
    """Five distinct topics and a copy of one: a kept merge of the copy updates the scores of the
    documents it refolded, which a full refold gives alike; the others' change is small against
    the merge's gain (a tenth: the fold-in of a document that splits itself between two alike topics
    can land elsewhere when any topic changes)."""
    model, documents = duplicated
    lam = np.array(model.lam)[:, [0, 1, 2, 3, 4, 7]]             # 7 repeats 2
    scores = merging.DocumentScores(documents, lam)
    scores.score_all(np.arange(6))
    gain, merge = scores.try_merge(2, 5, ETA)
    touched = merge[2]
    assert 0 < touched.size < scores.n_docs and gain > 0
    scores.accept(merge, ETA)
    full, _ = scores.fold_in(np.arange(scores.n_docs), scores.topics)
    assert np.array_equal(full[touched], scores.ll[touched])
    assert abs(full.sum() - scores.ll.sum()) < 0.1 * gain


def two_topics_sharing_their_heads(path):
    """Two topics with the same ten head words and different tails (they repeat each other by
    their top words), documents drawn from them, and an HDP model holding the two."""
    rng = np.random.default_rng(3)
    beta = np.full((2, 200), 1e-6)
    beta[:, :10] = 0.05
    beta[0, 10:100] += 0.5 / 90
    beta[1, 100:] += 0.5 / 100
    beta /= beta.sum(axis=1, keepdims=True)
    corpus = write_corpus(path, lda_documents(beta, 200, 60, 0.1, rng), 200)
    model = HDPModel(beta.T * 5000 + ETA, *sticks_for_weights(np.array([0.5, 0.5]), np.ones(1), np.ones(1)),
                     1.0, 1.0, ETA, corpus.vocab)
    assert repeated_topics(np.asarray(model.lam), np.arange(2)) == 2
    return model, RowSample(corpus, np.arange(200))


def few_repeats(monkeypatch):
    """Count any share of repeating topics as few (the scores decide every merge)."""
    import topicscale.coherence as coherence
    monkeypatch.setattr(coherence, "MANY_REPEATS", 2.0)


def test_a_repeating_pair_whose_merge_loses_is_kept_apart(tmp_path, monkeypatch):
    few_repeats(monkeypatch)
    model, documents = two_topics_sharing_their_heads(tmp_path / "c")
    lam = np.array(model.lam)
    result = merging.Merge(documents, "")(model)
    assert result["merged"] == 0 and result["scores"][0] == result["scores"][1]
    assert np.array_equal(model.lam, lam)


def test_when_a_tenth_of_the_topics_or_more_repeat_every_repeat_merges_whatever_it_scores(tmp_path):
    from topicscale.cli import _merge_line
    model, documents = two_topics_sharing_their_heads(tmp_path / "c")
    result = merging.Merge(documents, "")(model)
    assert result["merged"] == 1 and result["every_repeat"] and result["scores"][1] < result["scores"][0]
    assert carrying(model.topic_weights(), 0.99) == 1 and not model_repeats(model)
    assert "every repeat merged" in _merge_line(dict(result, seconds=0.0))[0]


def test_merges_that_score_lower_in_all_are_undone(tmp_path, monkeypatch):
    few_repeats(monkeypatch)
    model, documents = two_topics_sharing_their_heads(tmp_path / "c")
    model.residual = np.arange(1.0, model.n_topics + 1)
    lam, sticks = np.array(model.lam), (model.a.copy(), model.b.copy())
    try_merge = merging.DocumentScores.try_merge
    always_gains = lambda self, a, b, eta: (1.0, try_merge(self, a, b, eta)[1])     # every trial kept
    monkeypatch.setattr(merging.DocumentScores, "try_merge", always_gains)
    result = merging.Merge(documents, "")(model)
    assert result["merged"] == 0 and result["undone"] == 1 and result["scores"][1] < result["scores"][0]
    assert np.array_equal(model.lam, lam) and np.array_equal(model.a, sticks[0]) and np.array_equal(model.b, sticks[1])
    assert np.array_equal(model.residual, np.arange(1.0, model.n_topics + 1))


def test_a_topic_repeated_three_times_merges_over_two_rounds(duplicated):
    model, documents = duplicated
    lam = np.concatenate([np.asarray(model.lam), np.asarray(model.lam)[:, [0]] * 0.9 + ETA * 0.1], axis=1)
    weights = np.full(11, 1 / 11)
    three = HDPModel(lam, *sticks_for_weights(weights, np.ones(10), np.arange(10, 0, -1, dtype=float)), 1.0, 1.0,
                     ETA, model.vocab)
    result = merging.Merge(documents, "")(three)
    assert result["merged"] == 6 and carrying(three.topic_weights(), 0.99) == 5


def test_no_time_left_merges_nothing(duplicated):
    model, documents = duplicated
    model = copy(model)
    lam = np.array(model.lam)
    assert merging.Merge(documents, "")(model, seconds_left=0.0)["merged"] == 0
    assert np.array_equal(model.lam, lam)


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
    another; so every repeat merges, leaving far fewer topics, none repeating (after the polish, whose
    sweeps make a few repeat again, merges again), each planted topic still found, and the held-aside
    documents scored a little lower at most."""
    beta, train, _ = planted
    summaries, models = [], []
    for name, extra in (("merged", []), ("unmerged", ["--no-merge"])):
        r = CliRunner().invoke(cli, ["fit", str(train.path), "--model", "hdp", "-k", "30", "-o", str(tmp_path / name),
                                     "--seed", "1", "--threads", "1", "--json", "-q", *extra])
        assert r.exit_code == 0, r.output
        summaries.append(json.loads(r.stdout.strip().splitlines()[-1]))
        models.append(load_model(tmp_path / name))
    merge = summaries[0]["merge"]
    assert merge["merged"] >= 5 and merge["every_repeat"] and merge["scores"][1] >= merge["scores"][0] - 0.01
    again = summaries[0]["merge_after_polish"]         # the sweeps split a topic or two: those merge too
    assert again["merged"] >= 1
    assert models[0].settings["merge"] is True and models[0].settings["merged"] == merge["merged"] + again["merged"]
    assert "merge" not in summaries[1] and models[1].settings["merge"] is False
    merged, unmerged = (m.describe() for m in models)
    assert merged["effective_topics_99_tokens"] <= unmerged["effective_topics_99_tokens"] - 5
    assert summaries[0]["repeated_topics"] == 0 < summaries[1]["repeated_topics"]
    found = models[0].expected_beta()[:, models[0].display_order(False)].T
    cosine = (beta @ found.T) / np.outer(np.linalg.norm(beta, axis=1), np.linalg.norm(found, axis=1))
    assert cosine.max(axis=1).min() > 0.9


def test_fit_merges_before_the_polish_whose_sweeps_start_from_the_merged_topics(planted, tmp_path, monkeypatch):
    """The sweeps sharpen the merged topics: the polish's first score is that of the model the
    merges left (the same fit with --polish 0, its sticks not refit after), and the polished model
    lists no more topics."""
    from topicscale import convergence
    from topicscale.inference.global_steps.hdp import HDPSVI
    monkeypatch.delattr(HDPSVI, "refit_sticks")
    _, train, _ = planted
    summaries = []
    for name, extra in (("polished", []), ("merged", ["--polish", "0"])):
        r = CliRunner().invoke(cli, ["fit", str(train.path), "--model", "hdp", "-k", "30", "-o", str(tmp_path / name),
                                     "--seed", "1", "--threads", "1", "--json", "-q", *extra])
        assert r.exit_code == 0, r.output
        summaries.append(json.loads(r.stdout.strip().splitlines()[-1]))
    assert summaries[0]["merge"]["merged"] == summaries[1]["merge"]["merged"] >= 5
    scorer = convergence.PassScorer(train, None, 1, kind="hdp", aside=convergence.aside_rows(train, 1))
    merged, polished = load_model(tmp_path / "merged"), load_model(tmp_path / "polished")
    assert summaries[0]["polish"]["scores"][0] == scorer.sweeps_score(merged)
    r = CliRunner().invoke(cli, ["fit", str(train.path), "--model", "hdp", "-k", "30", "-o", str(tmp_path / "polished"),
                                 "--seed", "1", "--threads", "1", "--force"])
    assert f"against the merged passes' {summaries[0]['polish']['scores'][0]:.4f}" in r.output
    assert len(polished.display_order(False)) <= len(merged.display_order(False))


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


def test_the_estimator_merges_as_fit_does_and_partial_fit_refuses_it(planted, tmp_path):
    from topicscale import HDP
    _, train, _ = planted
    r = CliRunner().invoke(cli, ["fit", str(train.path), "--model", "hdp", "-k", "20", "--seed", "2", "--threads", "1",
                                 "-q", "-o", str(tmp_path / "cli")])
    assert r.exit_code == 0, r.output
    est = HDP(n_components=20, seed=2, threads=1).fit_corpus(train.path)
    cli_model = load_model(tmp_path / "cli")
    assert cli_model.settings["merged"] > 0
    assert np.array_equal(est.model_.expected_beta(), cli_model.expected_beta())
    rows = train.rows(np.arange(300))                  # partial_fit continues the topics the merges kept
    X = scipy.sparse.csr_matrix((rows.counts, rows.indices, rows.indptr), shape=(300, len(train.vocab)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")                 # n_components stays the truncation it started with
        est.partial_fit(X).partial_fit(X)
    assert est.components_.shape[0] == 20 - cli_model.settings["merged"]
    est.save(tmp_path / "continued")
    assert HDP.load(tmp_path / "continued").n_components == 20
    with pytest.raises(ValueError, match="not with partial_fit"):
        HDP(n_components=8, merge=True).partial_fit(np.ones((4, 500)))


def test_an_hdp_run_stopped_while_polishing_after_its_merges_resumes_to_the_same_model(planted, tmp_path,
                                                                                      monkeypatch):
    """Stopped during the sweeps, the run writes the merged model (checkpoint and partial model);
    --resume keeps those merges (its model counts them), redoes the polish and the second merges,
    and ends with the uninterrupted run's model, bit for bit."""
    from clirun import run_stopped
    from topicscale.polish import CHECK_SWEEPS
    _, train, _ = planted
    args = ["fit", train.path, "--model", "hdp", "-k", "30", "--seed", "1", "--threads", "1"]
    _, whole_polls = run_stopped(monkeypatch, 10 ** 9, *args, "-o", tmp_path / "whole")
    _, before_polish = run_stopped(monkeypatch, 10 ** 9, *args, "--polish", "0", "-o", tmp_path / "merged")
    assert whole_polls > before_polish + CHECK_SWEEPS + 1
    r, _ = run_stopped(monkeypatch, before_polish + CHECK_SWEEPS + 1, *args, "-o", tmp_path / "cut")
    assert r.exit_code == 0 and "partial model" in r.output
    assert np.array_equal(load_model(tmp_path / "cut").lam, load_model(tmp_path / "merged").lam)
    assert "resuming" in CliRunner().invoke(cli, ["fit", "--resume", str(tmp_path / "cut")]).output
    assert (tmp_path / "cut" / "model.npz").read_bytes() == (tmp_path / "whole" / "model.npz").read_bytes()


def test_keep_topics_keeps_their_columns_residual_and_renormalised_weights(duplicated):
    model = copy(duplicated[0])
    model.residual = np.arange(10, dtype=float)
    weights, lam = model.topic_weights(), np.array(model.lam)
    keep = np.array([0, 3, 4, 8])
    model.keep_topics(keep)
    assert model.n_topics == 4 and model.a.shape == model.b.shape == (3,)
    assert np.array_equal(model.lam, lam[:, keep]) and np.array_equal(model.residual, keep.astype(float))
    assert np.allclose(model.topic_weights(), weights[keep] / weights[keep].sum())


def test_fit_init_of_a_merged_hdp_continues_the_topics_its_merges_kept(planted, tmp_path):
    """The topics the merges emptied (lambda = eta) are dropped from a continuation: kept, they
    came back as identical copies of one topic."""
    _, train, _ = planted
    runner = CliRunner()
    r = runner.invoke(cli, ["fit", str(train.path), "--model", "hdp", "-k", "30", "-o", str(tmp_path / "merged"),
                            "--seed", "1", "--threads", "1", "-q"])
    assert r.exit_code == 0, r.output
    merged = load_model(tmp_path / "merged")
    emptied = (np.asarray(merged.lam) == ETA).all(axis=0)
    assert 5 <= emptied.sum() < 30
    r = runner.invoke(cli, ["fit", str(train.path), "--init", str(tmp_path / "merged"), "--passes", "1",
                            "-o", str(tmp_path / "more"), "--seed", "1", "--threads", "1", "--json", "-q"])
    assert r.exit_code == 0, r.output
    summary = json.loads(r.stdout.strip().splitlines()[-1])
    more = load_model(tmp_path / "more")
    kept = int((~emptied).sum())
    assert more.n_topics == summary["topics"] == kept and summary["dropped_topics"] == 30 - kept
    assert more.settings["dropped_topics"] == 30 - kept and more.settings["truncation"] == summary["truncation"] == 30
    lam = np.asarray(more.lam)
    assert len({lam[:, k].tobytes() for k in range(kept)}) == kept
    assert repeated_topics(more.lam, np.arange(kept)) == 0
    # the continued topics are the merged model's kept ones, in their order
    before, after = merged.expected_beta()[:, ~emptied], more.expected_beta()
    assert np.all(np.abs(before - after).sum(axis=0) < 0.5)
    text = runner.invoke(cli, ["fit", str(train.path), "--init", str(tmp_path / "merged"), "--passes", "1",
                               "-o", str(tmp_path / "more"), "--force", "--threads", "1", "-q"]).output
    assert f"(the {30 - kept} they emptied are dropped)" in text and "lists" not in text
    r = runner.invoke(cli, ["fit", str(train.path), "--init", str(tmp_path / "more"), "--passes", "1",
                            "-o", str(tmp_path / "again"), "--threads", "1", "-q"])
    assert r.exit_code == 0 and "dropped" not in r.output, r.output
    again = load_model(tmp_path / "again")                     # the truncation is carried on
    assert again.n_topics == kept and again.settings["truncation"] == 30 and "dropped_topics" not in again.settings


# ---------------------------------------------------------------- the sticks after merges and polish
def merged_fit(train, folder, refit_sticks=True):
    """The default HDP fit of the planted corpus (truncation 30, seed 1: it merges and polishes):
    (its fit --json summary, the saved model); the sticks not refit unless `refit_sticks`."""
    from topicscale.inference.global_steps.hdp import HDPSVI
    with pytest.MonkeyPatch.context() as patch:
        if not refit_sticks:
            patch.delattr(HDPSVI, "refit_sticks")
        r = CliRunner().invoke(cli, ["fit", str(train.path), "--model", "hdp", "-k", "30", "-o", str(folder),
                                     "--seed", "1", "--threads", "1", "--json", "-q"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout.strip().splitlines()[-1]), load_model(folder)


@pytest.fixture(scope="module")
def refit_fit(planted, tmp_path_factory):
    """merged_fit's (summary, model), its sticks refit."""
    return merged_fit(planted[1], tmp_path_factory.mktemp("refit"))


def refit(model, corpus, local=None):
    """model with its sticks refit on every document of `corpus` (a copy), by its own document
    step or `local`'s."""
    from topicscale import registry
    from topicscale.inference.global_steps.hdp import HDPSVI
    settings = dict(model.settings, **({"local": local} if local else {}))
    fresh = HDPModel(np.array(model.lam), model.a.copy(), model.b.copy(), model.alpha, model.omega, model.eta,
                     model.vocab, settings=settings, residual=model.residual)
    HDPSVI(fresh, registry.local_step_for(fresh), corpus.n_docs).refit_sticks(corpus)
    return fresh


def test_after_merges_and_sweeps_an_hdps_weights_are_refit_to_its_topics(planted, refit_fit, tmp_path):
    """A merge sums the sticks of the topics it joins and the sweeps move tokens with the sticks
    held, so the weights `topics` lists no longer follow the tokens: here two topics weigh over
    twice their share of the tokens, four a third of theirs. Refit, each listed topic's weight is
    near its share, the emptied topics weigh next to nothing, the topics are untouched, and a
    refit on all documents moves no weight by more than 0.005."""
    _, train, _ = planted
    summary, model = refit_fit
    stale_summary, stale = merged_fit(train, tmp_path / "stale", refit_sticks=False)
    assert summary["sticks_refit"]["docs"] == train.n_docs - 150 and "sticks_refit" not in stale_summary
    assert np.array_equal(model.lam, stale.lam)
    listed = model.display_order(False)
    ratio = lambda m: m.topic_weights()[listed] / m.token_weights()[listed]
    assert ratio(stale).max() > 2.0 and ratio(stale).min() < 0.4
    assert 0.7 < ratio(model).min() and ratio(model).max() < 1.3
    emptied = (np.asarray(model.lam) == ETA).all(axis=0)
    assert emptied.sum() >= 5 and model.topic_weights()[emptied].sum() < 0.01 and not emptied[listed].any()
    again = refit(model, train)
    assert np.abs(again.topic_weights() - model.topic_weights()).max() < 0.005


@pytest.mark.parametrize("local", ["cvb0", "meanfield", "hdp"])
def test_the_refit_weights_do_not_depend_on_the_sticks_they_start_from(planted, refit_fit, local):
    """The refit is the sticks' conditional given the topics, the tables counted under the sticks
    of the round before: from sticks that give one topic half of the weight, the rounds reach
    the weights they reach from the fitted ones, with each document step (the paper's two-level
    one counts its tables itself)."""
    _, train, _ = planted
    _, model = refit_fit
    skewed = refit(model, train)                    # a copy to skew
    w = skewed.topic_weights()
    k = int(np.argmin(np.where(w > 0.01, w, np.inf)))
    w = w * 0.5 / (w.sum() - w[k])
    w[k] = 0.5
    skewed.a, skewed.b = sticks_for_weights(w, skewed.a, skewed.b)
    from_skewed, from_fitted = (refit(m, train, local).topic_weights() for m in (skewed, model))
    assert from_skewed[k] < 0.2
    assert np.abs(from_skewed - from_fitted).max() < 1e-3


def test_the_sticks_are_refit_on_a_sample_of_the_training_documents(planted, tmp_path, monkeypatch):
    """A corpus of more than STICK_DOCS documents is refit on a sample of them, drawn from those it
    trains on (not the documents held aside), its tables scaled to the corpus: the weights and
    the sticks' concentration come out near a refit on every document's."""
    from topicscale import convergence, train as training
    from topicscale.corpus.subset import CorpusWithout
    _, train, _ = planted
    aside = convergence.aside_rows(train, 1)
    sample = convergence.training_sample(CorpusWithout(train, aside), 1, 500)
    assert sample.n_docs == 500 and not np.isin(sample.rows, aside).any()
    monkeypatch.setattr(training, "STICK_DOCS", 500)
    summary, model = merged_fit(train, tmp_path / "m")
    assert summary["sticks_refit"]["docs"] == 500
    everything = CorpusWithout(train, aside)
    full = refit(model, RowSample(train, everything.kept_rows(np.arange(everything.n_docs))))
    assert np.abs(full.topic_weights() - model.topic_weights()).max() < 0.01
    total = lambda m: m.a[0] + m.b[0]             # 1 + omega + the corpus's tables
    assert abs(total(model) / total(full) - 1.0) < 0.05
