"""`topicscale export --format gensim | pyldavis` and topicscale.pyldavis_data: gensim's LdaModel read
back by LdaModel.load, pyLDAvis's prepared data against pyLDAvis.prepare on the same inputs, and what
happens without the optional packages."""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner

from synthetic import lda_documents, planted_topics, write_corpus
from topicscale.cli import cli
from topicscale.exports.gensim_lda import laplace_bridge
from topicscale.exports.ldavis import prepared_dict
from topicscale.models import load_model
from topicscale.models.ctm import CTMModel
from topicscale.models.hdp import HDPModel, carrying

V = 120


def run(*args, code=0):
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exit_code == code, result.output
    return result


def printed_json(result):
    return json.loads(next(line for line in result.stdout.splitlines() if line.startswith("{")))


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """A small planted corpus, its held-out part and an LDA model fitted on it by the CLI."""
    root = tmp_path_factory.mktemp("export")
    rng = np.random.default_rng(26)
    beta = planted_topics(6, V, rng)
    corpus = write_corpus(root / "corpus", lda_documents(beta, 400, 40, 0.3, rng), V)
    heldout = write_corpus(root / "heldout", lda_documents(beta, 60, 40, 0.3, rng), V)
    run("fit", corpus.path, "-k", "6", "--passes", "2", "--batch-size", "100", "--seed", "3",
        "-o", root / "lda")
    return root, corpus, heldout


@pytest.fixture(scope="module")
def hdp_and_ctm(fitted):
    """An HDP model whose heaviest topics carry 99% of the weight before all 12 do, with one light
    topic among those that carry 99% of the tokens, and a CTM with correlations."""
    root, _, _ = fitted
    rng = np.random.default_rng(5)
    vocab = [f"w{i}" for i in range(V)]
    K = 12
    mass = 0.3 ** np.arange(K)
    mass[9] = 0.2                   # light by weight, heavy by tokens: listed for its tokens
    hdp = HDPModel(lam=0.01 + rng.gamma(0.3, 20.0, size=(V, K)) * mass, a=np.full(K - 1, 1.0),
                   b=np.full(K - 1, 0.4), alpha=1.5, omega=1.0, eta=0.01, vocab=vocab, residual=np.zeros(K))
    hdp.save(root / "hdp")
    K = 5
    A = rng.normal(size=(K, K))
    sigma0 = A @ A.T / K + 0.3 * np.eye(K)
    mu0 = rng.normal(size=K)
    ctm = CTMModel(lam=0.01 + rng.gamma(0.5, 10.0, size=(V, K)), mu0=mu0 - mu0.mean(), sigma0=sigma0,
                   moment2=sigma0.copy(), eta=0.01, vocab=vocab)
    ctm.save(root / "ctm")
    return root / "hdp", root / "ctm"


def load_gensim(folder):
    from gensim.models import LdaModel
    return LdaModel.load(str(folder / "model"))


# ------------------------------------------------------------------------------------ gensim
def test_gensim_round_trip_of_an_lda_model(fitted, tmp_path):
    root, _, _ = fitted
    run("export", root / "lda", "-o", tmp_path / "topics.npy")
    out = printed_json(run("export", root / "lda", "--format", "gensim", "-o", tmp_path / "g", "--json"))
    model = load_model(root / "lda")
    lda = load_gensim(tmp_path / "g")
    np.testing.assert_allclose(lda.get_topics(), np.load(tmp_path / "topics.npy"), rtol=0, atol=1e-12)
    assert lda.num_topics == 6 and lda.num_terms == V
    np.testing.assert_array_equal(lda.alpha, model.alpha)
    np.testing.assert_array_equal(lda.eta, np.full(V, model.eta))
    assert out["alpha"] == model.alpha.tolist() and out["eta"] == model.eta and out["not_carried"] == []
    # LdaModel.update would go on with our step sizes: rho = (tau + t)^-kappa from t = model.step
    s = model.settings
    assert (lda.decay, lda.offset, lda.chunksize) == (s["kappa"], s["tau"], s["batch_size"])
    assert lda.offset + lda.num_updates / lda.chunksize == s["tau"] + model.step
    # exp(E[log beta]) is the model's own, so gensim's inference runs on our topics
    np.testing.assert_allclose(lda.expElogbeta, model.exp_elog_beta().T, rtol=1e-12)
    from gensim.corpora import Dictionary
    assert isinstance(lda.id2word, Dictionary)
    assert lda.id2word.token2id == {w: i for i, w in enumerate(model.vocab)}
    assert [lda.id2word[i] for i in range(V)] == model.vocab
    top = lda.show_topic(0, topn=3)
    best = np.argsort(-model.expected_beta()[:, 0], kind="stable")[:3]
    assert [w for w, _ in top] == [model.vocab[i] for i in best]
    # a document of the two words most specific to topic 0 is put in topic 0 by gensim's inference
    e = model.exp_elog_beta()
    specific = np.argsort(-(e[:, 0] / e.sum(axis=1)), kind="stable")[:2]
    gamma, _ = lda.inference([[(int(specific[0]), 5), (int(specific[1]), 3)]])
    assert np.all(np.isfinite(gamma)) and gamma[0].argmax() == 0


def test_the_gensim_folder_holds_only_what_ldamodel_save_writes(fitted, tmp_path):
    root, _, _ = fitted
    run("export", root / "lda", "--format", "gensim", "-o", tmp_path / "g")
    names = sorted(os.listdir(tmp_path / "g"))
    assert names[0] == "model" and all(n == "model" or n.startswith("model.") for n in names)
    pickles = []
    for name in names:
        with open(tmp_path / "g" / name, "rb") as fh:
            head = fh.read(2)
        if head[:1] == b"\x80":                       # a pickle protocol 2+ header
            pickles.append(name)
    assert pickles and set(pickles) <= {"model", "model.state", "model.id2word"}
    # a second export replaces the first; a folder holding anything else is refused, untouched
    run("export", root / "lda", "--format", "gensim", "-o", tmp_path / "g")
    assert sorted(os.listdir(tmp_path / "g")) == names
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    result = run("export", root / "lda", "--format", "gensim", "-o", tmp_path / "mine", code=2)
    assert "notes.txt" in result.output
    assert os.listdir(tmp_path / "mine") == ["notes.txt"]


def test_gensim_export_of_hdp_keeps_the_topics_carrying_99_percent(hdp_and_ctm, tmp_path):
    hdp_path, _ = hdp_and_ctm
    model = load_model(hdp_path)
    weights = model.topic_weights()
    order = model.display_order(False)
    n = len(order)
    by_weight = np.argsort(-weights, kind="stable")[:carrying(weights, 0.99)]
    assert set(order) == set(by_weight) | {9} and n < model.n_topics     # 9 for its tokens, some left out
    run("export", hdp_path, "-o", tmp_path / "topics.npy")
    result = run("export", hdp_path, "--format", "gensim", "-o", tmp_path / "g", "--json")
    out = printed_json(result)
    lda = load_gensim(tmp_path / "g")
    assert lda.num_topics == n == out["topics"]
    numbers = np.loadtxt(tmp_path / "topics.weights.tsv", skiprows=1, usecols=0, dtype=int).tolist()
    assert out["topic_ids"] == list(order)              # the .npy's rows, found by weights.tsv's numbers
    rows = np.load(tmp_path / "topics.npy")[[numbers.index(k) for k in out["topic_ids"]]]
    np.testing.assert_allclose(lda.get_topics(), rows, rtol=0, atol=1e-12)
    np.testing.assert_allclose(lda.alpha, model.alpha * weights[order], rtol=1e-15)
    np.testing.assert_array_equal(lda.eta, np.full(V, model.eta))
    left_out = 1 - weights[order].sum() / weights.sum()
    assert 0 < left_out <= 0.01
    assert out["not_carried"] == [f"{model.n_topics - n} HDP topics ({left_out:.2%} of the weight) outside the "
                                  f"{n} that carry 99% of the weight or of the tokens"]
    assert "not carried: " in result.stderr
    reference = tmp_path / "ref"
    drawn = printed_json(run("synth", hdp_path, "-n", "40", "--doc-length", "30", "-o", reference, "--json"))
    assert drawn["topics"] == n                     # the listed topics, not the truncation's rest
    vis = printed_json(run("export", hdp_path, "--format", "pyldavis", "--corpus", reference,
                           "-o", tmp_path / "vis.json", "--json"))
    assert vis["topic_ids"] == out["topic_ids"] and vis["not_carried"] == out["not_carried"]


def test_gensim_export_of_ctm_says_its_correlations_are_not_carried(hdp_and_ctm, tmp_path):
    _, ctm_path = hdp_and_ctm
    model = load_model(ctm_path)
    run("export", ctm_path, "-o", tmp_path / "topics.npy")
    result = run("export", ctm_path, "--format", "gensim", "-o", tmp_path / "g", "--json")
    out = printed_json(result)
    lda = load_gensim(tmp_path / "g")
    np.testing.assert_allclose(lda.get_topics(), np.load(tmp_path / "topics.npy"), rtol=0, atol=1e-12)
    np.testing.assert_allclose(lda.alpha, laplace_bridge(model.mu0, model.sigma0), rtol=1e-15)
    assert np.all(lda.alpha > 0)
    assert any("correlations" in s for s in out["not_carried"])
    assert "not carried: the CTM topic correlations" in result.stderr


def test_pyldavis_export_of_ctm_says_its_correlations_are_not_carried(fitted, hdp_and_ctm, tmp_path):
    _, corpus, _ = fitted
    _, ctm_path = hdp_and_ctm
    result = run("export", ctm_path, "--format", "pyldavis", "--corpus", corpus.path, "-o", tmp_path / "vis.json",
                 "--json")
    assert any("correlations" in s for s in printed_json(result)["not_carried"])
    assert "not carried: the CTM topic correlations" in result.stderr


def test_an_export_to_a_missing_folder_names_the_folder(fitted, tmp_path):
    root, corpus, _ = fitted
    for args in (("-o", tmp_path / "nowhere" / "t.npy"),
                 ("--format", "pyldavis", "--corpus", corpus.path, "-o", tmp_path / "nowhere" / "vis.json")):
        result = run("export", root / "lda", *args, code=2)
        assert result.output.strip().splitlines()[-1] == (
            f"topicscale: error: {args[-1]}: the folder {tmp_path / 'nowhere'} does not exist")
        assert ".tmp" not in result.output
    assert list(tmp_path.iterdir()) == []


def test_laplace_bridge_inverts_the_laplace_approximation_of_a_dirichlet():
    # Dirichlet(alpha) in the softmax basis: mu_k = log alpha_k - mean(log alpha),
    # Sigma_kk = (1 - 2/K) / alpha_k + sum_l (1 / alpha_l) / K^2 (MacKay 1998); the bridge maps back.
    alpha = np.array([0.3, 1.0, 2.5, 7.0])
    K = alpha.shape[0]
    mu = np.log(alpha) - np.log(alpha).mean()
    sigma = np.diag((1 - 2 / K) / alpha + (1 / alpha).sum() / K ** 2)
    np.testing.assert_allclose(laplace_bridge(mu + 4.0, sigma), alpha, rtol=1e-12)   # shift ignored


# ----------------------------------------------------------------------------------- pyLDAvis
def pyldavis_inputs(root, corpus, model_dir, tmp_path):
    """prepare()'s inputs assembled independently: the .npy export, `infer` output, the corpus."""
    run("export", model_dir, "-o", tmp_path / "topics.npy")
    run("infer", model_dir, corpus.path, "-o", tmp_path / "theta.npy")
    counts = np.zeros(V)
    lengths = []
    for block in corpus.blocks():
        np.add.at(counts, block.indices, block.counts)
        lengths += [block.counts[a:b].sum() for a, b in zip(block.indptr[:-1], block.indptr[1:])]
    return dict(topic_term_dists=np.load(tmp_path / "topics.npy"), doc_topic_dists=np.load(tmp_path / "theta.npy"),
                doc_lengths=np.array(lengths), vocab=corpus.vocab, term_frequency=counts)


def assert_same_prepared(ours, theirs):
    assert set(ours) == set(theirs)
    assert ours["topic.order"] == theirs["topic.order"]
    assert (ours["R"], ours["lambda.step"], ours["plot.opts"]) == (theirs["R"], theirs["lambda.step"],
                                                                   theirs["plot.opts"])
    a, b = ours["mdsDat"], theirs["mdsDat"]
    assert (a["topics"], a["cluster"]) == (b["topics"], b["cluster"])
    np.testing.assert_allclose(a["Freq"], b["Freq"], rtol=1e-10)
    for axis in ("x", "y"):                           # the same map up to the sign of each axis
        x, y = np.array(a[axis]), np.array(b[axis])
        sign = 1.0 if x @ y >= 0 else -1.0
        np.testing.assert_allclose(x, sign * y, rtol=1e-7, atol=1e-10)
    a, b = ours["tinfo"], theirs["tinfo"]
    assert (a["Term"], a["Category"]) == (b["Term"], b["Category"])
    for column in ("Freq", "Total"):
        np.testing.assert_allclose(a[column], b[column], rtol=1e-10)
    for column in ("logprob", "loglift"):
        np.testing.assert_allclose(a[column], b[column], rtol=0, atol=1e-4 + 1e-12)
    a, b = ours["token.table"], theirs["token.table"]
    assert (a["Term"], a["Topic"]) == (b["Term"], b["Topic"])
    np.testing.assert_allclose(a["Freq"], b["Freq"], rtol=1e-10)


def test_pyldavis_json_equals_pyldavis_prepare_on_the_same_inputs(fitted, tmp_path):
    pyLDAvis = pytest.importorskip("pyLDAvis")
    root, corpus, _ = fitted
    out = printed_json(run("export", root / "lda", "--format", "pyldavis", "--corpus", corpus.path,
                           "-o", tmp_path / "vis.json", "--json"))
    assert out["topics"] == 6
    ours = json.loads((tmp_path / "vis.json").read_text())
    theirs = pyLDAvis.prepare(**pyldavis_inputs(root, corpus, root / "lda", tmp_path), n_jobs=1).to_dict()
    assert_same_prepared(ours, theirs)
    assert len(ours["tinfo"]["Term"]) > 30 and len(ours["token.table"]["Term"]) > 30


def test_pyldavis_data_is_a_prepared_data_that_pyldavis_renders(fitted, tmp_path):
    pyLDAvis = pytest.importorskip("pyLDAvis")
    import topicscale
    root, corpus, heldout = fitted
    data = topicscale.pyldavis_data(root / "lda", heldout.path)
    assert type(data).__name__ == "PreparedData" and isinstance(data, tuple)
    theirs = pyLDAvis.prepare(**pyldavis_inputs(root, heldout, root / "lda", tmp_path), n_jobs=1)
    assert_same_prepared(json.loads(data.to_json()), theirs.to_dict())
    html = pyLDAvis.prepared_data_to_html(data)
    assert "LDAvis" in html and '"mdsDat"' in html
    top = data.sorted_terms(topic=1, _lambda=1.0)
    assert top["Term"].iloc[0] == theirs.sorted_terms(topic=1, _lambda=1.0)["Term"].iloc[0]


def test_pyldavis_data_takes_a_fitted_estimator_and_a_document_term_matrix(fitted):
    pytest.importorskip("pyLDAvis")
    pytest.importorskip("sklearn")
    import scipy.sparse as sp
    import topicscale
    root, _, heldout = fitted
    X = sp.vstack([sp.csr_matrix((b.counts, b.indices, b.indptr), shape=(b.n_docs, V)) for b in heldout.blocks()])
    shown = json.loads(topicscale.pyldavis_data(root / "lda", heldout.path).to_json())
    est = topicscale.LDA.load(root / "lda")
    for model, corpus in ((est, heldout.path), (est.model_, X), (est, X.toarray()), (root / "lda", X.tocoo())):
        assert json.loads(topicscale.pyldavis_data(model, corpus).to_json()) == shown
    refused = [(topicscale.LDA(), X, ValueError, "is not fitted yet"),
               (est, X[:, 1:], ValueError, f"X has {V - 1} columns, but the model has {V} words"),
               (est, X * 0, ValueError, "X holds no counts"),
               (est, ["a document's text"], TypeError, "or a document-term matrix of counts"),
               (est, {"w0": 1}, TypeError, "or a document-term matrix of counts"),
               (3, X, TypeError, "or a fitted LDA, HDP or CTM, not int")]
    for model, corpus, error, message in refused:
        with pytest.raises(error, match=message):
            topicscale.pyldavis_data(model, corpus)


def test_prepared_dict_matches_pyldavis_on_random_topics_with_ties():
    pyLDAvis = pytest.importorskip("pyLDAvis")
    rng = np.random.default_rng(9)
    K, W, D = 5, 60, 40
    phi = rng.dirichlet(np.full(W, 0.3), size=K)
    phi[:, 10] = phi[:, 11]                            # two terms alike in every topic: relevance ties
    phi /= phi.sum(axis=1, keepdims=True)
    theta = rng.dirichlet(np.full(K, 0.5), size=D)
    lengths = rng.integers(5, 200, size=D).astype(float)
    vocab = [f"t{i:02d}" for i in range(W)]
    theirs = pyLDAvis.prepare(phi, theta, lengths, vocab, np.ones(W), n_jobs=1, R=12, lambda_step=0.1)
    ours = prepared_dict(phi, lengths @ theta, vocab, R=12, lambda_step=0.1)
    assert_same_prepared(json.loads(json.dumps(ours)), json.loads(theirs.to_json()))


def test_pyldavis_export_of_hdp_shows_the_topics_carrying_99_percent(fitted, hdp_and_ctm, tmp_path):
    _, corpus, _ = fitted
    hdp_path, _ = hdp_and_ctm
    run("export", hdp_path, "--format", "pyldavis", "--corpus", corpus.path, "-o", tmp_path / "vis.json")
    data = json.loads((tmp_path / "vis.json").read_text())
    n = len(load_model(hdp_path).display_order(False))
    assert sorted(data["topic.order"]) == list(range(1, n + 1))
    assert sum(data["mdsDat"]["Freq"]) == pytest.approx(100.0)


# ------------------------------------------------------------------------------ refusals
def test_bad_outputs_and_options_are_refused_with_exit_2(fitted, tmp_path):
    root, corpus, _ = fitted
    assert "must end in .npy" in run("export", root / "lda", "-o", tmp_path / "t.txt", code=2).output
    assert "must end in .json" in run("export", root / "lda", "--format", "pyldavis", "--corpus",
                                      corpus.path, "-o", tmp_path / "v.html", code=2).output
    assert "needs --corpus" in run("export", root / "lda", "--format", "pyldavis", "-o",
                                   tmp_path / "v.json", code=2).output
    assert "--format pyldavis only" in run("export", root / "lda", "--corpus", corpus.path, "-o",
                                           tmp_path / "t.npy", code=2).output
    assert "--threads goes with" in run("export", root / "lda", "--threads", "1", "-o", tmp_path / "t.npy",
                                        code=2).output
    (tmp_path / "other").mkdir()
    write_corpus(tmp_path / "other" / "c", lda_documents(planted_topics(2, 50, np.random.default_rng(1)),
                                                        10, 10, 0.5, np.random.default_rng(2)), 50)
    result = run("export", root / "lda", "--format", "pyldavis", "--corpus", tmp_path / "other" / "c",
                 "-o", tmp_path / "v.json", code=2)
    assert "vocabulary differs" in result.output and not (tmp_path / "v.json").exists()
    assert list(tmp_path.glob(".v.json*")) == []


def test_no_output_replaces_a_file_of_a_model_or_a_corpus(fitted, tmp_path):
    """export and infer refuse (exit 2, one line) to write over a model's or a corpus's own file."""
    root, corpus, _ = fitted
    model, data = tmp_path / "lda", tmp_path / "corpus"
    shutil.copytree(root / "lda", model)
    shutil.copytree(corpus.path, data)
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    for args, what in (
            (("export", model, "-o", data / "shard-00000.counts.npy"), f"corpus in {data}"),
            (("export", model, "--format", "pyldavis", "--corpus", data, "-o", data / "manifest.json"),
             f"corpus in {data}"),
            (("export", model, "--format", "pyldavis", "--corpus", data, "-o", model / "coherence.json"),
             f"model in {model}"),
            (("infer", model, data, "-o", data / "shard-00000.indptr.npy"), f"corpus in {data}")):
        result = run(*args, code=2)
        assert result.output.strip().splitlines()[-1] == (f"topicscale: error: {args[-1]} is a file of the "
                                                          f"topicscale {what}; write to another file (nothing "
                                                          "was changed)")
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before
    run("export", model, "-o", data / "topics.npy")            # beside them is fine
    run("infer", model, data, "-o", model / "theta.npy")
    assert (data / "topics.vocab.txt").exists() and (model / "theta.ids.txt").exists()
    starting = tmp_path / "starting"        # a fit before its first checkpoint: its log and lock only
    starting.mkdir()
    (starting / ".run.jsonl").write_text("")
    from topicscale.atomic import check_not_owned
    from topicscale.errors import TopicscaleError
    with pytest.raises(TopicscaleError, match="is a file of the topicscale model"):
        check_not_owned(starting / ".run.jsonl")


def without(module, *argv):
    """Run the CLI in a fresh interpreter where importing `module` fails."""
    code = (f"import sys; sys.modules[{module!r}] = None\n"
            f"from topicscale.cli import main; main({[str(a) for a in argv]!r})")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)


def test_without_gensim_the_export_says_how_to_install_it(fitted, tmp_path):
    root, _, _ = fitted
    for blocked in ("gensim", "gensim.models"):
        result = without(blocked, "export", root / "lda", "--format", "gensim", "-o", tmp_path / "g")
        assert result.returncode == 2, result.stderr
        assert "pip install 'topicscale[gensim]'" in result.stderr and not (tmp_path / "g").exists()


def test_without_pyldavis_pyldavis_data_says_how_to_install_it(fitted, monkeypatch):
    import topicscale
    from topicscale.errors import TopicscaleError
    root, corpus, _ = fitted
    monkeypatch.setitem(sys.modules, "pyLDAvis", None)
    with pytest.raises(TopicscaleError, match=r"pip install 'topicscale\[pyldavis\]'"):
        topicscale.pyldavis_data(root / "lda", corpus.path)


def test_import_topicscale_loads_no_optional_package():
    code = ("import sys, topicscale; f = topicscale.pyldavis_data; "
            "print([m for m in ('pyLDAvis', 'pandas', 'gensim', 'pyarrow', 'numba') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        import topicscale
        topicscale.nothing_here
