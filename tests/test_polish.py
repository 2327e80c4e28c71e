"""fit --polish: batch CVB0 sweeps after the streamed passes (topicscale/polish.py,
kernels/polish.py) against their numpy twins, on planted topics, spilled to disk, within a time
limit, and stopped and resumed."""
import numba
import numpy as np
import pytest

import reference
from clirun import run, run_stopped
from synthetic import lda_documents, matched_tv, planted_topics, random_csr, write_corpus
from topicscale import cli as cli_module
from topicscale import polish as polish_module
from topicscale.kernels import polish as kernel
from topicscale.models import load_model


def test_document_responsibilities_match_the_numpy_twin():
    rng = np.random.default_rng(0)
    indptr, indices, counts = random_csr(rng, 30, 40)
    topics = rng.dirichlet(np.full(40, 0.3), size=7).T.copy()
    alpha = rng.gamma(1.0, 0.2, size=7)
    got = np.empty((indices.shape[0], 7), dtype=np.float32)
    kernel.document_responsibilities(indptr, indices, counts, topics, alpha, 3, got)
    want = reference.polish_start(indptr, indices, counts, topics, alpha, 3)
    assert np.allclose(got, want, rtol=1e-5, atol=1e-7)
    assert np.allclose(got.sum(axis=1), 1.0, atol=1e-5)


@pytest.mark.parametrize("K", [1, 7, 8, 13, 50])
def test_sum_in_eight_adds_each_value_to_its_k_mod_8_sum_in_float32(K):
    x = np.random.default_rng(K).random(K).astype(np.float32)
    s = [np.float32(0.0)] * 8
    for k, value in enumerate(x):
        s[k % 8] = np.float32(s[k % 8] + value)
    want = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]))
    assert kernel.sum_in_eight(x) == want


def sweep_once(indptr, indices, counts, resp, n_wk, alpha, eta, relax):
    """A sweep with float32 counts, as Polish runs it; returns (n_wk, n_k) after it."""
    n_k, n_wk = n_wk.sum(axis=0), n_wk.astype(np.float32)
    change = np.zeros((kernel.LANES,) + n_wk.shape, np.float32)
    kernel.sweep(indptr, indices, counts, resp, n_wk, n_k, alpha, eta, change, relax)
    assert not change.any()                     # the lanes' scratch is left zero
    return n_wk, n_k


@pytest.mark.parametrize("relax", [1.0, polish_module.RELAXATION, 4.0])
def test_a_sweep_matches_the_numpy_twin_and_keeps_the_counts_consistent(relax):
    rng = np.random.default_rng(1)
    indptr, indices, counts = random_csr(rng, 40, 50)
    K, V = 6, 50
    resp = rng.dirichlet(np.ones(K), size=indices.shape[0]).astype(np.float32)
    n_wk = np.zeros((V, K))
    kernel.add_word_counts(indices, counts, resp, n_wk)
    alpha = np.full(K, 0.1)
    want_resp, want_n_wk = reference.polish_sweep(indptr, indices, counts, resp, n_wk, alpha, 0.01,
                                                      relax)
    assert relax < 2 or (want_resp == 0).any()  # the clipping at 0 is exercised
    n_wk, n_k = sweep_once(indptr, indices, counts, resp, n_wk, alpha, 0.01, relax)
    assert np.allclose(resp, want_resp, rtol=1e-4, atol=1e-6)
    assert np.allclose(n_wk, want_n_wk, rtol=1e-6, atol=1e-5)
    recount = np.zeros((V, K))
    kernel.add_word_counts(indices, counts, resp, recount)
    assert np.allclose(n_wk, recount, rtol=1e-6, atol=1e-5) and np.allclose(n_k, recount.sum(axis=0))


def test_a_sweep_gives_the_same_bits_on_one_thread_or_two():
    rng = np.random.default_rng(2)
    indptr, indices, counts = random_csr(rng, 60, 80)
    resp = rng.dirichlet(np.ones(9), size=indices.shape[0]).astype(np.float32)
    n_wk = np.zeros((80, 9))
    kernel.add_word_counts(indices, counts, resp, n_wk)
    before = numba.get_num_threads()
    results = []
    try:
        for threads in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
            numba.set_num_threads(threads)
            r = resp.copy()
            n, _ = sweep_once(indptr, indices, counts, r, n_wk, np.full(9, 0.2), 0.05, polish_module.RELAXATION)
            results.append((r, n))
    finally:
        numba.set_num_threads(before)
    assert np.array_equal(results[0][0], results[1][0]) and np.array_equal(results[0][1], results[1][1])


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    rng = np.random.default_rng(5)
    beta = planted_topics(8, 240, rng)
    path = tmp_path_factory.mktemp("polish") / "corpus"
    return beta, write_corpus(path, lda_documents(beta, 1500, 40, 0.2, rng), 240, shard_docs=600)


def topics_of(folder):
    return load_model(folder).expected_beta().T


def test_polish_sharpens_a_short_fit_towards_the_planted_topics(planted, tmp_path):
    """A fifth of a pass leaves the topics blurred; 20 sweeps bring them close to the planted
    ones (and much closer than the unpolished fit)."""
    beta, corpus = planted
    base = ["fit", corpus.path, "-k", "8", "--passes", "0.2", "--batch-size", "100", "--seed", "2"]
    run(*base, "-o", tmp_path / "plain")
    out = run(*base, "--polish", "20", "-o", tmp_path / "polished").output
    assert "then 20 polish sweeps" in out
    plain, polished = matched_tv(topics_of(tmp_path / "plain"), beta), matched_tv(topics_of(tmp_path / "polished"), beta)
    assert polished < 0.15 and polished < plain / 2, (plain, polished)


def test_polish_is_deterministic_and_spilling_to_disk_changes_nothing(planted, tmp_path, monkeypatch):
    _, corpus = planted
    args = ["fit", corpus.path, "-k", "8", "--passes", "0.5", "--polish", "3", "--seed", "4"]
    run(*args, "-o", tmp_path / "a")
    run(*args, "-o", tmp_path / "b")
    spilled = []
    real = np.memmap

    def memmap(*a, **k):
        if str(a[0]).endswith(polish_module.SPILL_FILE):      # not the corpus's shards
            spilled.append(a[0])
        return real(*a, **k)

    monkeypatch.setattr(polish_module, "RESIDENT_BYTES", 0)
    monkeypatch.setattr(polish_module.np, "memmap", memmap)
    monkeypatch.setattr(polish_module, "available_memory", lambda: 1 << 40)    # half of it holds them
    run(*args, "-o", tmp_path / "d")
    assert not spilled
    monkeypatch.setattr(polish_module, "available_memory", lambda: None)       # unknown: to disk
    run(*args, "-o", tmp_path / "c")
    assert spilled and not any((tmp_path / "c").glob(".*.tmp"))
    a = (tmp_path / "a" / "model.npz").read_bytes()
    assert all(a == (tmp_path / d / "model.npz").read_bytes() for d in "bcd")
    assert load_model(tmp_path / "a").settings["polish"] == 3


def test_polish_counts_as_training_and_stops_at_the_time_limit(planted):
    """No time left: the responsibilities are counted once, no sweep runs."""
    _, corpus = planted
    from topicscale.models.lda import LDAModel
    model = LDAModel.initial(corpus.vocab, 8, 0.125, 0.01, np.random.default_rng(0))
    before = model.expected_beta()
    result = polish_module.Polish(corpus, 5, corpus.path)(model, seconds_left=0.0)
    assert result["sweeps"] == 0
    assert not np.allclose(model.expected_beta(), before)
    assert np.isclose(model.lam.sum() - model.eta * model.lam.size, corpus.n_tokens)


def test_a_run_stopped_while_polishing_resumes_to_the_same_model(planted, tmp_path, monkeypatch):
    _, corpus = planted
    args = ["fit", corpus.path, "-k", "8", "--passes", "1", "--batch-size", "500", "--polish", "4",
            "--seed", "1"]
    run(*args, "-o", tmp_path / "whole")
    r, polls = run_stopped(monkeypatch, 5, *args, "-o", tmp_path / "cut")   # 3 minibatches, then blocks
    assert r.exit_code == 0 and "partial model" in r.output
    assert polls == 6
    assert "resuming" in run("fit", "--resume", tmp_path / "cut").output
    assert (tmp_path / "cut" / "model.npz").read_bytes() == (tmp_path / "whole" / "model.npz").read_bytes()


def test_polish_goes_with_lda_and_hdp(planted, tmp_path):
    _, corpus = planted
    r = run("fit", corpus.path, "--model", "ctm", "--polish", "2", "-o", tmp_path / "m", ok=False)
    assert r.exit_code == 2 and "--polish goes with the models lda, hdp" in r.output


def test_the_hdp_is_polished_under_its_stick_prior(planted):
    """An HDP's sweeps are LDA's with alpha_k = alpha0 E[sigma_k(V)] (asymmetric here), the
    sticks left as they were."""
    from topicscale.models.hdp import HDPModel
    from topicscale.models.lda import LDAModel
    _, corpus = planted
    rng = np.random.default_rng(4)
    hdp = HDPModel.initial(corpus.vocab, 8, 2.0, 1.0, 0.01, rng, topics="near-uniform")
    hdp.a, hdp.b = rng.gamma(2.0, 1.0, 7) + 1, rng.gamma(2.0, 1.0, 7) + 1
    sticks = (hdp.a.copy(), hdp.b.copy())
    prior = hdp.local_prior().dirichlet
    assert np.ptp(prior) > 0.1 and prior.sum() == pytest.approx(2.0)
    lda = LDAModel(np.array(hdp.lam), prior, 0.01, corpus.vocab)
    for model in (hdp, lda):
        polish_module.Polish(corpus, 3, corpus.path)(model)
    assert np.array_equal(hdp.lam, lda.lam)
    assert not np.allclose(hdp.lam, HDPModel.initial(corpus.vocab, 8, 2.0, 1.0, 0.01, np.random.default_rng(4),
                                                     topics="near-uniform").lam)
    assert np.array_equal(hdp.a, sticks[0]) and np.array_equal(hdp.b, sticks[1])
    # the sweeps' topics count tokens only: nothing is left of the initial topics
    assert np.array_equal(hdp.residual, np.zeros(8))
    assert np.allclose(hdp.token_weights(), (hdp.lam.sum(axis=0) - 0.01 * hdp.n_words) / corpus.n_tokens)


def test_an_hdp_fit_polishes_by_default_checked_by_the_common_fold_in_of_its_exported_topics(planted, tmp_path):
    """--polish auto keeps a mean-field HDP's sweeps by the score its passes are scored by, the one
    another tool gives its exported topics, not by its own predictive."""
    import json
    from topicscale import convergence
    from topicscale.evaluate import evaluate_exported, evaluate_model
    _, corpus = planted
    out = json.loads(run("fit", corpus.path, "--model", "hdp", "--local", "meanfield", "-k", "16", "--batch-size",
                         "300", "--no-merge", "--json", "-q", "-o", tmp_path / "m").stdout)
    p = out["polish"]
    assert p["scored_on"] == "1000 training documents (the common fold-in of the exported topics)"
    assert len(p["scores"]) >= 2 and p["scores"][0] == out["pass_scores"][-1]
    saved = load_model(tmp_path / "m")
    sample = convergence.training_sample(corpus, 0)
    assert evaluate_exported(saved, sample)["per_word_ll"] == max(p["scores"])
    assert evaluate_model(saved, sample)["per_word_ll"] != max(p["scores"])     # not the own predictive
    assert saved.settings["polished"] == f"kept {p['kept']} of {p['sweeps']} sweeps"


def test_a_cvb0_hdp_fit_polishes_by_default_checked_by_the_cvb0_fold_in_under_its_stick_prior(planted, tmp_path,
                                                                                              monkeypatch):
    """Trained with the CVB0 document step, the HDP's sweeps are scored as LDA's are: CVB0
    document completion under its prior alpha0 E[sigma_k], its own predictive (not the common
    fold-in of its exported topics, which scores blurred topics higher on short documents); the
    sticks the score was taken under are kept (not refit after) to compare it."""
    import json
    from topicscale import convergence
    from topicscale.evaluate import evaluate_exported
    from topicscale.inference.global_steps.hdp import HDPSVI
    monkeypatch.delattr(HDPSVI, "refit_sticks")
    _, corpus = planted
    out = json.loads(run("fit", corpus.path, "--model", "hdp", "--local", "cvb0", "-k", "16", "--batch-size",
                         "300", "--no-merge", "--json", "-q", "-o", tmp_path / "m").stdout)
    p = out["polish"]
    assert p["scored_on"] == "1000 training documents (CVB0 fold-in, 20 passes a document)"
    scorer = convergence.PassScorer(corpus, None, 0, kind="hdp")
    saved = load_model(tmp_path / "m")
    assert scorer.sweeps_score(saved) == max(p["scores"]) != p["scores"][0]
    assert p["scores"][0] != out["pass_scores"][-1]
    sample = convergence.training_sample(corpus, 0)
    assert evaluate_exported(saved, sample)["per_word_ll"] != max(p["scores"])


def test_the_sweeps_leave_the_topics_a_merge_emptied_empty(planted):
    """Topics at their prior (lambda = eta, weight FLOOR: what a merge leaves) get no
    responsibility, at the start or in the sweeps, so they hold no tokens after them; the others
    share every token."""
    from topicscale.merge import FLOOR
    from topicscale.models.hdp import HDPModel, sticks_for_weights
    _, corpus = planted
    hdp = HDPModel.initial(corpus.vocab, 10, 1.0, 1.0, 0.01, np.random.default_rng(3), topics="near-uniform")
    lam = np.array(hdp.lam)
    lam[:, 7:] = 0.01
    hdp.lam = lam
    weights = np.r_[np.full(7, (1 - 3 * FLOOR) / 7), np.full(3, FLOOR)]
    hdp.a, hdp.b = sticks_for_weights(weights, hdp.a, hdp.b)
    assert list(polish_module.emptied(hdp)) == [False] * 7 + [True] * 3
    polish_module.Polish(corpus, 5, corpus.path)(hdp)
    assert np.all(hdp.lam[:, 7:] == 0.01)
    assert hdp.lam[:, :7].sum() - 7 * 0.01 * hdp.n_words == pytest.approx(corpus.n_tokens, rel=1e-5)


def test_the_estimator_polishes_as_fit_does_and_partial_fit_refuses_it(planted, tmp_path):
    from topicscale import LDA
    _, corpus = planted
    run("fit", corpus.path, "-k", "8", "--passes", "0.5", "--polish", "3", "--seed", "4", "-o", tmp_path / "cli")
    est = LDA(n_components=8, passes=0.5, polish=3, seed=4).fit_corpus(corpus.path)
    assert np.array_equal(est.model_.expected_beta(), load_model(tmp_path / "cli").expected_beta())
    with pytest.raises(ValueError, match="not with partial_fit"):
        LDA(n_components=8, polish=3).partial_fit(np.ones((4, 240)))


def run_auto(corpus, scores, monkeypatch, max_sweeps=100, stop_requested=lambda: False, repeating=0,
             relied_on=False):
    """Polish "auto" on a fresh 30-topic model, scored by `scores` in turn; returns (model, its
    passes' lambda, the lambdas scored, the result). `repeating`: how many of topics 0-14 topics
    15-29 repeat (twice as many topics repeat another)."""
    from topicscale.coherence import model_repeats
    from topicscale.models.lda import LDAModel
    monkeypatch.setattr(polish_module, "MAX_SWEEPS", max_sweeps)
    model = LDAModel.initial(corpus.vocab, 30, 1 / 30, 0.01, np.random.default_rng(0))
    lam = np.array(model.lam)
    lam[:, 15:15 + repeating] = lam[:, :repeating] * 1.01
    model.lam = lam
    assert model_repeats(model) == 2 * repeating
    passes, scored = np.array(model.lam), []

    def score(m):
        scored.append(m.lam)
        return scores[len(scored) - 1]

    result = polish_module.Polish(corpus, "auto", corpus.path, relied_on=relied_on)(model, stop_requested,
                                                                                   score=score)
    return model, passes, scored, result


@pytest.mark.parametrize("scores,repeating,sweeps,kept", [
    ([-5.0, -5.005, -5.004], 0, 10, 0),          # within a check's gain of the passes: the passes' topics
    ([-5.0, -5.005, -5.004], 1, 10, 10),         # ... unless they repeat one another
    ([-5.0, -5.02, -5.03], 1, 10, 0),            # the sweeps lose by more than REPEAT_MARGIN
    ([-5.0, -5.0, -4.9, -4.91, -4.92], 1, 20, 10),
    ([-5.0, -5.3, -5.2, -5.21, -5.22], 2, 20, 10)])  # a tenth repeat or more: the passes are not kept
def test_auto_keeps_the_sweeps_within_a_margin_of_passes_whose_topics_repeat(planted, monkeypatch, scores,
                                                                            repeating, sweeps, kept):
    _, corpus = planted
    model, passes, scored, result = run_auto(corpus, scores, monkeypatch, repeating=repeating)
    assert (result["sweeps"], result["kept"]) == (sweeps, kept) and result["scores"] == scores
    assert result.get("passes_repeating") == (2 * repeating or None)
    assert result.get("passes_ruled_out", False) == (repeating == 2)
    assert np.array_equal(model.lam, scored[kept // polish_module.CHECK_SWEEPS])
    line = cli_module._polish_line(dict(result, scored_on="x"))
    assert ("they had to score 0.01 higher" in line) == (repeating == 1)
    assert ("a tenth or more, so not kept" in line) == (repeating == 2)


def test_an_hdp_with_many_repeating_topics_keeps_passes_that_outscore_its_sweeps(planted, monkeypatch):
    from topicscale.models.hdp import HDPModel
    _, corpus = planted
    model = HDPModel.initial(corpus.vocab, 10, 1.0, 1.0, 0.01, np.random.default_rng(1), topics="near-uniform")
    lam = np.array(model.lam)
    lam[:, 5:] = lam[:, :5] * 1.01
    model.lam = lam
    scores = iter([-5.0, -5.3, -5.2])
    result = polish_module.Polish(corpus, "auto", corpus.path)(model, score=lambda m: next(scores))
    assert result["kept"] == 0 and "passes_ruled_out" not in result and result["passes_repeating"] > 0


@pytest.mark.parametrize("scores,kept", [([-5.0, -5.1, -5.2], 0), ([-5.0, -4.9, -4.8, -4.8, -4.8], 10)])
def test_an_hdp_keeps_its_residual_with_the_passes_topics_and_none_with_the_sweeps(planted, scores, kept):
    from topicscale.models.hdp import HDPModel
    _, corpus = planted
    hdp = HDPModel.initial(corpus.vocab, 8, 1.0, 1.0, 0.01, np.random.default_rng(1), topics="near-uniform")
    passes, residual = np.array(hdp.lam), hdp.residual.copy()
    assert np.all(residual > 0)
    seen = []

    def score(m):
        seen.append(np.array(m.residual))
        return scores[len(seen) - 1]

    result = polish_module.Polish(corpus, "auto", corpus.path)(hdp, score=score)
    assert result["kept"] == kept
    assert np.array_equal(seen[0], residual) and all(np.array_equal(r, np.zeros(8)) for r in seen[1:])
    if kept:
        assert np.array_equal(hdp.residual, np.zeros(8)) and not np.array_equal(hdp.lam, passes)
    else:
        assert np.array_equal(hdp.residual, residual) and np.array_equal(hdp.lam, passes)


@pytest.mark.parametrize("scores,sweeps,kept", [
    ([-5.0, -5.1, -5.2], 10, 0),                 # the first two checks lose: the passes' topics stay
    ([-5.0, -5.0, -4.9, -4.91, -4.92], 20, 10),  # a flat first check, then a gain: go on
    ([-5.0, -4.995, -4.99], 10, 10),             # two gains under 5 sweeps' MIN_GAIN: stop
    ([-5.0, -4.9, -4.95, -4.96], 15, 5),         # two losses after a gain: the best check's topics
    ([-5.0, -4.9, -4.95, -4.8, -4.9, -4.85], 25, 15),   # a gain between two misses goes on
    ([-5.0, -4.9, -4.8, -4.795, -4.79], 20, 20),        # two gains under it stop, and are kept
    ([-5.0, -4.0, -3.0, -2.0, -1.0, 0.0], 25, 25),      # the cap (25 here) stops a run that gains
])
def test_auto_stops_when_checks_gain_too_little_and_keeps_the_best_topics(planted, monkeypatch, scores,
                                                                         sweeps, kept):
    _, corpus = planted
    model, passes, scored, result = run_auto(corpus, scores, monkeypatch, max_sweeps=25)
    assert (result["sweeps"], result["kept"]) == (sweeps, kept)
    assert result["scores"] == scores and np.array_equal(scored[0], passes)
    assert np.array_equal(model.lam, scored[kept // polish_module.CHECK_SWEEPS])


def test_auto_scores_the_topics_a_fixed_number_of_sweeps_gives(planted, monkeypatch):
    from topicscale.models.lda import LDAModel
    _, corpus = planted
    _, _, scored, _ = run_auto(corpus, [-5.0, -4.0, -3.0], monkeypatch, max_sweeps=10)
    fixed = LDAModel.initial(corpus.vocab, 30, 1 / 30, 0.01, np.random.default_rng(0))
    polish_module.Polish(corpus, 5, corpus.path)(fixed)
    assert np.array_equal(scored[1], fixed.lam)


def test_auto_skips_what_would_not_fit_in_memory_and_a_stop_restores_the_passes_topics(planted, monkeypatch):
    _, corpus = planted
    polls = iter(range(1000))
    model, passes, scored, result = run_auto(corpus, [-5.0, -4.0, -3.0], monkeypatch,
                                             stop_requested=lambda: next(polls) == 12)
    assert result is None and np.array_equal(model.lam, passes) and len(scored) == 3  # checks at 5 and 10
    need = polish_module.responsibilities_bytes(corpus, 30)
    for resident, available in ((need - 1, None), (need, 2 * need - 2)):    # over 4 GiB, over half
        monkeypatch.setattr(polish_module, "RESIDENT_BYTES", resident)
        monkeypatch.setattr(polish_module, "available_memory", lambda: available)
        model, passes, scored, result = run_auto(corpus, [], monkeypatch)
        assert result["sweeps"] == 0 and "memory" in result["skipped"] and np.array_equal(model.lam, passes)
        assert not scored and result["needs_bytes"] == need
    monkeypatch.setattr(polish_module, "available_memory", lambda: 2 * need)
    assert run_auto(corpus, [-5.0, -5.1, -5.2], monkeypatch)[3]["sweeps"] == 2 * polish_module.CHECK_SWEEPS


def test_fit_polishes_by_default_only_when_it_trains_until_the_model_stops_improving(planted, tmp_path):
    import json
    from topicscale import convergence
    from topicscale.evaluate import evaluate_model
    _, corpus = planted
    out = json.loads(run("fit", corpus.path, "-k", "8", "--batch-size", "300", "--json", "-q",
                         "-o", tmp_path / "auto").stdout)
    p = out["polish"]
    assert p["scored_on"] == "1000 training documents (CVB0 fold-in, 20 passes a document)"
    assert p["sweeps"] == polish_module.CHECK_SWEEPS * (len(p["scores"]) - 1)
    saved = load_model(tmp_path / "auto")
    assert saved.settings["polish"] == "auto"
    assert saved.settings["polished"] == f"kept {p['kept']} of {p['sweeps']} sweeps"
    run("fit", corpus.path, "-k", "8", "--batch-size", "300", "--polish", "0", "-o", tmp_path / "passes")
    scorer = convergence.PassScorer(corpus, None, 0)
    assert p["scores"][0] == scorer.sweeps_score(load_model(tmp_path / "passes"))
    assert scorer.sweeps_score(saved) == max(p["scores"])
    sample = convergence.training_sample(corpus, 0)
    assert evaluate_model(saved, sample)["per_word_ll"] != max(p["scores"])    # not the mean-field fold-in
    assert "polish sweeps over the corpus" in run("fit", corpus.path, "-k", "8", "--batch-size", "300",
                                                  "--force", "-o", tmp_path / "auto").output
    for given in (["--passes", "1"], ["--init", tmp_path / "auto"]):
        out = json.loads(run("fit", corpus.path, *given, "--json", "-q", "-o", tmp_path / "other",
                             "--force").stdout)
        assert "polish" not in out and load_model(tmp_path / "other").settings["polish"] == 0


def test_a_run_stopped_while_polishing_auto_writes_the_passes_model_and_resumes_to_the_same_one(
        planted, tmp_path, monkeypatch):
    import json
    _, corpus = planted
    args = ["fit", corpus.path, "-k", "8", "--batch-size", "500", "--seed", "1"]
    whole = json.loads(run(*args, "--json", "-q", "-o", tmp_path / "whole").stdout)
    assert whole["polish"]["sweeps"] > polish_module.CHECK_SWEEPS + 1        # stopped after a check
    run(*args, "--polish", "0", "-o", tmp_path / "passes")
    r, _ = run_stopped(monkeypatch, whole["batches"] + polish_module.CHECK_SWEEPS + 1, *args,
                       "-o", tmp_path / "cut")                  # one block a sweep: stops in sweep 7
    assert r.exit_code == 0 and "partial model" in r.output
    assert np.array_equal(load_model(tmp_path / "cut").lam, load_model(tmp_path / "passes").lam)
    assert "resuming" in run("fit", "--resume", tmp_path / "cut").output
    assert (tmp_path / "cut" / "model.npz").read_bytes() == (tmp_path / "whole" / "model.npz").read_bytes()


def test_fit_says_the_best_check_of_sweeps_it_did_not_keep():
    from topicscale.cli import _polish_line
    line = _polish_line({"sweeps": 10, "seconds": 0.5, "kept": 0, "scores": [-7.0, -7.2, -7.1], "scored_on": "x"})
    assert "at best they scored -7.1000 on x against the passes' -7.0000: kept the passes' topics" in line


def test_from_the_assignment_start_the_sweeps_open_at_a_flatter_prior(planted, monkeypatch):
    """relied_on (fit --start assignment): FLAT_SWEEPS sweeps at FLAT_ALPHA x alpha, then the N at
    alpha; any other start: the N alone."""
    from topicscale.models.lda import LDAModel
    _, corpus = planted
    priors, real = [], kernel.sweep

    def sweep(indptr, indices, counts, resp, n_wk, n_k, alpha, *rest):
        priors.append(alpha.copy())
        return real(indptr, indices, counts, resp, n_wk, n_k, alpha, *rest)

    monkeypatch.setattr(kernel, "sweep", sweep)
    monkeypatch.setattr(polish_module, "FLAT_SWEEPS", 2)
    blocks = len(list(corpus.blocks(polish_module.BLOCK_DOCS)))
    for relied_on, flat in ((True, 2), (False, 0)):
        priors.clear()
        model = LDAModel.initial(corpus.vocab, 8, 1 / 8, 0.01, np.random.default_rng(0))
        result = polish_module.Polish(corpus, 3, corpus.path, relied_on=relied_on)(model)
        expected = [polish_module.FLAT_ALPHA / 8] * (flat * blocks) + [1 / 8] * (3 * blocks)
        assert np.allclose([p[0] for p in priors], expected) and all(np.all(p == p[0]) for p in priors)
        assert result["sweeps"] == 3 and result.get("flat_sweeps", 0) == flat
    assert polish_module.outcome(result | {"flat_sweeps": 2}) == "3 sweeps after 2 at a flatter prior"
    assert "then 2 sweeps at a flatter prior and 3 polish sweeps" in cli_module._polish_line(result | {"flat_sweeps": 2})


def test_the_assignment_starts_topics_are_never_kept_whatever_they_score(planted, monkeypatch):
    """From the assignment start (relied_on) the passes' topics are the sweeps' starting point: a
    better score does not keep them, as it would from any other start; and the checks stop the
    sweeps only from RELIED_MIN_SWEEPS on (20: the fourth check)."""
    _, corpus = planted
    monkeypatch.setattr(polish_module, "FLAT_SWEEPS", 1)
    for relied_on, sweeps, kept in ((False, 10, 0), (True, 20, 5)):
        model, passes, scored, result = run_auto(corpus, [-5.0, -5.1, -5.2, -5.3, -5.4], monkeypatch,
                                                 relied_on=relied_on)
        assert (result["sweeps"], result["kept"]) == (sweeps, kept)
        assert result.get("passes_from_assignment", False) == relied_on
        assert np.array_equal(model.lam, scored[kept // polish_module.CHECK_SWEEPS])
    assert "the assignment start's, where the sweeps start from: not kept" in cli_module._polish_line(
        dict(result, scored_on="x"))
