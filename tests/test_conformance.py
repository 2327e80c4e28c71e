"""One conformance suite over every accepted model x algorithm x local-step combination of the
registry, through the command line: a new algorithm registers itself and is tested here."""
import json

import numpy as np
import pytest
from click.testing import CliRunner

from topicscale import registry
from topicscale.cli import cli
from topicscale.models import load_model

COMBINATIONS = [(c.model, c.algorithm, local) for c in registry.MATRIX for local in c.locals]


def run(*args):
    r = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return r.output


def fit(corpus, out, model, algorithm, local, *extra):
    return run("fit", corpus.path, "--model", model, "--algorithm", algorithm, "--local", local,
               "-k", "12", "--batch-size", "250", "--passes", "2", "--seed", "4", *extra, "-o", out)


@pytest.fixture(scope="module")
def fitted(planted, tmp_path_factory):
    """Each combination fitted once with held-out evaluations along the way."""
    _, corpus, heldout = planted
    root = tmp_path_factory.mktemp("conformance")
    out = {}
    for combo in COMBINATIONS:
        path = root / "-".join(combo)
        fit(corpus, path, *combo, "--heldout", heldout.path, "--eval-every", "4", "--threads", "2")
        out[combo] = path
    return out


@pytest.mark.parametrize("combo", COMBINATIONS, ids="-".join)
def test_shapes_and_probabilities(planted, fitted, combo, tmp_path):
    _, corpus, heldout = planted
    model = load_model(fitted[combo])
    beta = model.expected_beta()
    assert beta.shape[0] == corpus.n_words and np.all(beta >= 0) and np.all(np.isfinite(beta))
    assert np.allclose(beta.sum(axis=0), 1.0)
    weights = model.topic_weights()
    assert np.all(weights >= 0) and np.isclose(weights.sum(), 1.0)
    run("infer", fitted[combo], heldout.path, "-o", tmp_path / "theta.npy")
    theta = np.load(tmp_path / "theta.npy")
    assert theta.shape == (heldout.n_docs, beta.shape[1]) and np.allclose(theta.sum(axis=1), 1.0)
    run("export", fitted[combo], "-o", tmp_path / "topics.npy")
    assert np.allclose(np.load(tmp_path / "topics.npy").sum(axis=1), 1.0)


@pytest.mark.parametrize("combo", COMBINATIONS, ids="-".join)
def test_heldout_likelihood_improves_with_training(fitted, combo):
    lines = (fitted[combo] / "metrics.jsonl").read_text().splitlines()
    scores = [r["per_word_ll"] for r in map(json.loads, lines) if r["event"] == "eval"]
    assert len(scores) >= 3 and all(np.isfinite(scores))
    assert scores[-1] > scores[0]


@pytest.mark.parametrize("combo", COMBINATIONS, ids="-".join)
def test_same_seed_same_model_with_one_thread_and_save_load_round_trip(planted, fitted, combo, tmp_path):
    _, corpus, heldout = planted
    fit(corpus, tmp_path / "one", *combo, "--heldout", heldout.path, "--eval-every", "4", "--threads", "1")
    assert (tmp_path / "one" / "model.npz").read_bytes() == (fitted[combo] / "model.npz").read_bytes()
    load_model(fitted[combo]).save(tmp_path / "copy")
    assert (tmp_path / "copy" / "model.npz").read_bytes() == (fitted[combo] / "model.npz").read_bytes()
