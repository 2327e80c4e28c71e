"""`eval`'s protocol: one common fold-in for every LDA model (mean-field on E[beta], alpha = 1/K,
the protocol of evaluate_topics), the model's own behind --fold-in own; and the shape checks
of evaluate_topics / document_completion."""
import json

import numpy as np
import pytest

from clirun import run
from topicscale import registry
from topicscale.errors import TopicscaleError
from topicscale.evaluate import document_completion, evaluate_model, evaluate_topics
from topicscale.inference.local_steps.meanfield import MeanField
from topicscale.models import load_model

COMMON_LINE = "protocol: common (mean-field fold-in on E[beta], alpha = 1/K)"



def eval_json(model, heldout, *extra):
    return json.loads(run("eval", model, heldout, "--json", *extra).output)


@pytest.fixture(scope="module")
def fits(planted, tmp_path_factory):
    """Two LDA SVI fits of the planted corpus that differ only in their local step, scored on
    the held-out corpus during training: {local step: (model folder, fit summary)}."""
    _, train, heldout = planted
    root = tmp_path_factory.mktemp("protocol")
    out = {}
    for local in ("meanfield", "cvb0"):
        summary = run("fit", train.path, "-k", "10", "--local", local, "--batch-size", "100", "--seed", "1",
                      "--heldout", heldout.path, "--eval-every", "10", "--json", "-q", "-o", root / local)
        out[local] = root / local, json.loads(summary.output)
    return out


def test_default_eval_of_any_lda_model_is_evaluate_topics_on_its_expected_beta(planted, fits, tmp_path):
    """Models trained with different local steps are scored by the same fold-in: the default
    score is evaluate_topics of E[beta] with alpha = 1/K, exactly, and that of the exported
    K x V matrix (its topics in display order)."""
    _, _, heldout = planted
    for local, (folder, _) in fits.items():
        model = load_model(folder)
        assert model.settings["local"] == local
        ev = eval_json(folder, heldout.path)
        assert ev["protocol"] == "common"
        expected = evaluate_topics(model.expected_beta().T, heldout)
        assert ev["per_word_ll"] == expected["per_word_ll"]
        assert (ev["documents"], ev["heldout_tokens"]) == (expected["documents"], expected["heldout_tokens"])
        assert evaluate_model(model, heldout) == dict(expected, protocol="common")
        run("export", folder, "-o", tmp_path / f"{local}.npy")
        exported = evaluate_topics(np.load(tmp_path / f"{local}.npy"), heldout, alpha=1 / model.n_topics)
        assert ev["per_word_ll"] == pytest.approx(exported["per_word_ll"], rel=1e-12)   # topics permuted
        assert evaluate_topics(model.expected_beta().T, str(heldout.path)) == expected    # a location


def test_fold_in_own_is_the_models_local_step_and_differs_for_cvb0(planted, fits):
    from topicscale.inference.local_steps.cvb0 import CVB0
    _, _, heldout = planted
    folder, _ = fits["cvb0"]
    model = load_model(folder)
    common, own = eval_json(folder, heldout.path), eval_json(folder, heldout.path, "--fold-in", "own")
    assert (common["protocol"], own["protocol"]) == ("common", "own")
    assert own["per_word_ll"] == evaluate_model(model, heldout, fold_in="own", local=CVB0())["per_word_ll"]
    assert abs(own["per_word_ll"] - common["per_word_ll"]) > 1e-3
    assert eval_json(folder, heldout.path, "--fold-in", "common") == common


def test_text_output_names_the_protocol(planted, fits):
    _, _, heldout = planted
    folder, _ = fits["cvb0"]
    lines = run("eval", folder, heldout.path).output.splitlines()
    assert lines[0] == COMMON_LINE and lines[1].startswith("per-word log likelihood")
    own = run("eval", folder, heldout.path, "--fold-in", "own").output.splitlines()
    assert own[0] == "protocol: own (the model's local step cvb0, 2 passes a document, and its prior)"
    assert run("eval", folder, heldout.path, "--fold-in", "other", ok=False).exit_code == 2


def test_only_cvb0_names_its_passes(fits):
    """CVB0's own fold-in runs a fixed number of passes a document, which its score depends on;
    the other steps run to their tolerance (mean-field) or their own sweeps (Gibbs)."""
    from topicscale.evaluate import describe_protocol
    model = load_model(fits["cvb0"][0])
    model.settings["burn_in"] = 4
    assert describe_protocol(model, "own") == "own (the model's local step cvb0, 5 passes a document, and its prior)"
    for local in ("meanfield", "gibbs"):
        model.settings["local"] = local
        assert describe_protocol(model, "own") == f"own (the model's local step {local}, and its prior)"


def test_fit_heldout_scores_use_the_default_eval_protocol(planted, fits):
    """fit --heldout (summary and metrics.jsonl) scores by eval's default, whatever local step
    the fit ran with."""
    _, _, heldout = planted
    for local, (folder, summary) in fits.items():
        ev = eval_json(folder, heldout.path)
        assert summary["heldout"]["protocol"] == "common"
        assert summary["heldout"]["per_word_ll"] == pytest.approx(ev["per_word_ll"], rel=1e-12)
        records = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]
        evals = [r for r in records if r["event"] == "eval"]
        assert len(evals) >= 3 and all(r["protocol"] == "common" for r in evals)
        assert evals[-1]["per_word_ll"] == summary["heldout"]["per_word_ll"]


def test_common_score_does_not_depend_on_the_recorded_local_step(planted, fits):
    """The same topics recorded with another local step (as fit's choice may differ with
    --passes): the same default score, a different own score."""
    _, _, heldout = planted
    model = load_model(fits["cvb0"][0])
    common, own = evaluate_model(model, heldout), evaluate_model(model, heldout, fold_in="own")
    model.settings["local"] = "meanfield"
    assert evaluate_model(model, heldout) == common
    assert evaluate_model(model, heldout, fold_in="own") != own
    with pytest.raises(ValueError, match="fold_in"):
        evaluate_model(model, heldout, fold_in="mine")
    with pytest.raises(ValueError, match="local= is the local step of fold_in='own'"):
        evaluate_model(model, heldout, local=MeanField())


@pytest.mark.parametrize("kind", ["hdp", "ctm"])
def test_hdp_and_ctm_score_their_own_predictive_or_their_exported_topics(planted, tmp_path, kind):
    """By default (and --fold-in own) their own predictive; --fold-in common or gibbs scores the
    topics `export` writes as an LDA's, as fit and the benchmarks do (it was ignored)."""
    from topicscale.evaluate import evaluate_exported
    _, train, heldout = planted
    fitted = run("fit", train.path, "--model", kind, "-k", "6", "--max-docs", "400", "--batch-size", "100", "-q",
                 "--heldout", heldout.path, "-o", tmp_path / kind).output
    assert "held-out per-word log likelihood" in fitted and "by its own predictive" in fitted
    default = eval_json(tmp_path / kind, heldout.path)
    own = eval_json(tmp_path / kind, heldout.path, "--fold-in", "own")
    assert default == own and own["protocol"] == "own"
    model = load_model(tmp_path / kind)
    assert own["per_word_ll"] == evaluate_model(model, heldout, fold_in="own")["per_word_ll"]
    for fold_in in ("common", "gibbs"):
        exported = eval_json(tmp_path / kind, heldout.path, "--fold-in", fold_in)
        assert exported["protocol"] == fold_in and exported["per_word_ll"] != own["per_word_ll"]
        assert exported["per_word_ll"] == evaluate_exported(model, heldout, fold_in=fold_in)["per_word_ll"]
    lines = run("eval", tmp_path / kind, heldout.path).output.splitlines()
    local = registry.local_step_for(model).name
    assert lines[0] == f"protocol: own predictive of the {kind} model (local step {local})"
    lines = run("eval", tmp_path / kind, heldout.path, "--fold-in", "common").output.splitlines()
    assert lines[0] == f"protocol: common (mean-field fold-in on the topics `export` writes of the {kind} model, alpha = 1/K)"


# ------------------------------------------------------------------ shape and value checks
class KernelMustNotRun:
    """A local step that fails the test if document_completion reaches it."""
    def fit(self, *args, **kwargs):
        raise AssertionError("the local step ran on inputs that should have been refused")


def stochastic(K, V, seed=0):
    return np.random.default_rng(seed).dirichlet(np.ones(V), size=K)


@pytest.mark.parametrize("V_off", [-1, 7])
def test_evaluate_topics_refuses_a_vocabulary_of_another_size(planted, V_off):
    _, _, heldout = planted
    V = heldout.n_words + V_off
    with pytest.raises(ValueError, match=rf"{V} columns.*vocabulary of {heldout.n_words} words") as err:
        evaluate_topics(stochastic(10, V), heldout)
    assert isinstance(err.value, TopicscaleError)


@pytest.mark.parametrize("V_off", [-1, 7])
def test_document_completion_refuses_topics_of_another_vocabulary_before_the_kernel(planted, V_off):
    _, _, heldout = planted
    V = heldout.n_words + V_off
    beta = np.ascontiguousarray(stochastic(10, V).T)
    with pytest.raises(TopicscaleError, match=rf"cover {V} words.*vocabulary of {heldout.n_words} words"):
        document_completion(heldout, beta, beta, np.full(10, 0.1), local=KernelMustNotRun())


def test_document_completion_refuses_estep_and_score_topics_of_different_shapes(planted):
    _, _, heldout = planted
    V = heldout.n_words
    estep, score = np.ascontiguousarray(stochastic(10, V).T), np.ascontiguousarray(stochastic(11, V).T)
    with pytest.raises(ValueError, match=rf"\({V} x 10\).*\({V} x 11\) differ in shape"):
        document_completion(heldout, estep, score, np.full(10, 0.1), local=KernelMustNotRun())
    with pytest.raises(ValueError, match="V x K matrix"):
        document_completion(heldout, estep[:, 0], estep[:, 0], np.full(10, 0.1), local=KernelMustNotRun())


@pytest.mark.parametrize("K_prior", [9, 11])
def test_prior_length_must_equal_the_number_of_topics(planted, K_prior):
    _, _, heldout = planted
    beta = np.ascontiguousarray(stochastic(10, heldout.n_words).T)
    with pytest.raises(ValueError, match=rf"alpha has {K_prior} values, but there are K = 10 topics"):
        document_completion(heldout, beta, beta, np.full(K_prior, 0.1), local=KernelMustNotRun())
    with pytest.raises(ValueError, match=rf"alpha has {K_prior} values, but there are K = 10 topics"):
        evaluate_topics(beta.T, heldout, alpha=np.full(K_prior, 0.1))


def test_evaluate_topics_refuses_a_matrix_that_is_not_a_distribution(planted):
    _, _, heldout = planted
    beta = stochastic(10, heldout.n_words)
    bad = beta.copy()
    bad[3, 5] = np.nan
    with pytest.raises(ValueError, match=r"1 entries that are NaN or infinite \(first in row 3\)"):
        evaluate_topics(bad, heldout)
    bad = beta.copy()
    bad[2, 0] = -0.25
    bad[2, 1] += 0.25
    with pytest.raises(ValueError, match="1 negative entries"):
        evaluate_topics(bad, heldout)
    with pytest.raises(ValueError, match=r"rows must each sum to 1.*row \d sums to 2"):
        evaluate_topics(2 * beta, heldout)
    bad = beta.copy()
    bad[7] *= 0.99
    with pytest.raises(ValueError, match="row 7 sums to 0.99"):
        evaluate_topics(bad, heldout)
    with pytest.raises(ValueError, match="K x V matrix"):
        evaluate_topics(beta[0], heldout)
    # within the tolerance (e.g. topics normalised in float32) is accepted
    assert np.isfinite(evaluate_topics(beta.astype(np.float32), heldout)["per_word_ll"])
