"""The scikit-learn estimators (topicscale/estimator.py): the topics, scores and proportions of
the command line, bit for bit; scikit-learn's estimator checks; pipelines and grid search;
model folders shared with the command line; input checks; parameters from fit's declarations."""
import gzip
import importlib
import json
import math
import os
import pickle
import pkgutil
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from click.testing import CliRunner

from synthetic import lda_documents, planted_topics
from topicscale import options, registry
from topicscale.cli import cli
from topicscale.corpus import matrix
from topicscale.corpus.writers import write_mm

try:
    from topicscale.estimator import CTM, HDP, LDA
except ImportError:                       # no scikit-learn: only the tests that need none run
    LDA = HDP = CTM = None
needs_sklearn = pytest.mark.skipif(LDA is None, reason="scikit-learn is not installed "
                                   "(pip install topicscale[sklearn]; `make test` installs it)")
ESTIMATORS = {"lda": LDA, "hdp": HDP, "ctm": CTM}
SOTU = Path(__file__).resolve().parent.parent / "data" / "sotu.jsonl.gz"


def run(*args):
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def counts(n_docs, n_words, seed, empty=()):
    """A dense int64 document-term matrix drawn from LDA with 4 planted topics; rows `empty`
    zeroed."""
    rng = np.random.default_rng(seed)
    beta = planted_topics(4, n_words, rng)
    X = np.zeros((n_docs, n_words), dtype=np.int64)
    for i, (ids, c) in enumerate(lda_documents(beta, n_docs, 30, 0.3, rng)):
        X[i, ids] = c
    X[list(empty)] = 0
    return X


def prepare(folder, X, vocab=None):
    """`topicscale prepare` of X written as MatrixMarket (with `vocab`, a file or a model)."""
    folder.mkdir(parents=True, exist_ok=True)
    write_mm(folder / "x.mm", ((np.flatnonzero(r), r[np.flatnonzero(r)]) for r in X), X.shape[1])
    args = ["--vocab", vocab] if vocab is not None else []
    run("prepare", folder / "x.mm", *args, "-o", folder / "corpus")
    return folder / "corpus"


def lambda_of(model_folder):
    from topicscale.models import load_model
    return np.asarray(load_model(model_folder).lam)


VOCAB = [f"word{i}" for i in range(60)]


@pytest.fixture(autouse=True)
def temporary_folders_in_memory(monkeypatch, tmp_path_factory):
    """The estimators' temporary corpora and model folders on a tmpfs where there is one: a fit
    fsyncs them as `topicscale fit` does, which on a busy disk took most of the tests' time.
    (pytest's own temporary folder is made first, where it would be.)"""
    import tempfile
    tmp_path_factory.getbasetemp()
    if Path("/dev/shm").is_dir() and os.access("/dev/shm", os.W_OK):
        monkeypatch.setattr(tempfile, "tempdir", "/dev/shm")


# ------------------------------------------------------------------ import and parameters
def test_import_topicscale_loads_no_estimator_until_asked():
    code = ("import sys, topicscale; from topicscale.cli import cli; "
            "cli.main(args=['--help'], standalone_mode=False); "
            "print(sorted(m for m in ('sklearn', 'numba') if m in sys.modules)); "
            "print('LDA' in dir(topicscale))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().split("\n")[-2:] == ["[]", "True"]


def test_without_scikit_learn_the_estimators_say_how_to_install_it():
    code = ("import sys; sys.modules['sklearn'] = None\n"
            "try:\n    from topicscale import LDA\nexcept ImportError as exc:\n    print(exc)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "pip install topicscale[sklearn]" in out.stdout


@needs_sklearn
@pytest.mark.parametrize("kind", ["lda", "hdp", "ctm"])
def test_parameters_are_the_fit_options_of_the_model(kind):
    """Every option of the `fit` command (click's, so an option added anywhere shows up) but
    those about a run's output and where it runs, that a part of this model owns; K is n_components; all None,
    as click's defaults are."""
    fit = {p.name: p for p in cli.commands["fit"].params}
    output_only = {"corpus", "output", "resume", "force", "as_json", "quiet", "config", "model", "heldout",
                   "eval_every", "checkpoint_every", "checkpoint_seconds", "report",
                   "scheduler", "workers"}                  # where a run's local steps run: fit's only
    owned = set()
    for c in registry.MATRIX:
        if c.model == kind:
            owned = owned.union(*(options.owned(kind, c.algorithm, n) for n in c.locals))
    part = {o.name for o in options.PART_OPTIONS}
    expected = {"n_components" if n == "n_topics" else n for n in fit
                if n not in output_only and (n not in part or n in owned)}
    estimator = ESTIMATORS[kind]()
    got = estimator.get_params()
    assert set(got) == expected | {"total_samples"}        # the estimators' own (estimator_params.OWN)
    assert all(v is None for v in got.values())
    assert all(fit[n].default is None for n in options.BY_NAME)     # click passes None when unset
    assert {"max_iter", "n_components", "passes", "seed", "algorithm", "local"} <= set(got)
    assert ("omega" in got) == (kind == "hdp") and ("alpha" in got) == (kind != "ctm")
    assert ("estep_beta" in got) == (kind in ("lda", "hdp"))     # the mean-field step of both
    doc = type(estimator).__doc__
    assert "max_iter is the E-step cap" in doc
    assert all(f"\n{name} : default=None" in doc for name in got)


@needs_sklearn
def test_parameters_are_checked_as_the_command_line_checks_its_options(tmp_path):
    X = counts(30, 20, 0)
    refused = [
        (LDA(algorithm="scvb0", max_iter=5), "max_iter goes with the local steps"),
        (LDA(n_components=0), "n_components=0"),
        (LDA(n_components=2.5), "must be a whole number"),
        (LDA(kappa=0.3), "kappa=0.3"),
        (LDA(precision="half"), "precision='half'"),
        (LDA(alpha=float("nan")), "finite"),
        (LDA(accelerate="yes"), "True or False"),
        (HDP(tau=0.5), "tau must be at least 1"),
        (CTM(local="cvb0"), "local=cvb0 does not go with algorithm=svi"),
        (LDA(algorithm="nope"), "algorithm='nope'"),
        (LDA(threads=0), "threads=0"),
        (LDA(seed=-1), "seed=-1: -1 is not in the range 0<=x"),
        (CTM(seed=-5), "seed=-5: -5 is not in the range 0<=x"),
        (LDA(total_samples=0), "total_samples=0: must be a positive number"),
        (CTM(algorithm="batch", total_samples=1000), "total_samples goes with the stochastic algorithms"),
        (LDA(init_model=tmp_path / "missing"), "init_model="),
    ]
    for estimator, message in refused:
        with pytest.raises(ValueError, match=message.replace("(", r"\(")):
            estimator.fit(X)
        assert not hasattr(estimator, "model_")
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        LDA(K=3)
    with pytest.raises(TypeError):
        LDA(3)


@needs_sklearn
def test_errors_and_notes_of_a_fit_name_its_parameters_and_x(tmp_path, capsys):
    """Not the command line's flags and commands, nor the temporary corpus X is written to."""
    X = counts(60, 60, 14)
    LDA(n_components=3, passes=1).fit(X, vocabulary=VOCAB).save(tmp_path / "lda")
    HDP(n_components=5, passes=1).fit(X).save(tmp_path / "hdp")
    words = r"X's columns must be the model's words, in its order: pass them as vocabulary="
    refused = [
        (LDA(init_model=tmp_path / "lda", passes=1), {}, words),
        (LDA(init_model=tmp_path / "lda", passes=1), {"vocabulary": VOCAB[::-1]}, words),
        (LDA(init_model=tmp_path / "hdp"), {}, r"holds a hdp model: continue it with topicscale.HDP\(init_model="),
        (LDA(passes=0.0001), {}, "passes=0.0001 trains on no document of X;"),
    ]
    for est, given, message in refused:
        for method in (est.fit, est.partial_fit)[:1 if "passes=" in message else 2]:
            with pytest.raises(ValueError, match=message) as caught:
                method(X, **given)
            assert "topicscale-" not in str(caught.value) and "--" not in str(caught.value)
    assert LDA(init_model=tmp_path / "lda", passes=1).fit(X, vocabulary=VOCAB).n_batch_iter_ == 2
    capsys.readouterr()
    long_documents = np.random.default_rng(0).poisson(1.0, size=(100, 200))
    LDA(n_components=3).fit(long_documents)                 # --start auto takes the assignment start
    noted = capsys.readouterr().err
    assert "(start=auto; start=near-uniform streams passes instead)" in noted and "--" not in noted


# ------------------------------------------------------------------ the command line's results
CASES = {
    "lda": ({"n_components": 4}, ["-k", "4"]),
    "lda-scvb0": ({"n_components": 4, "algorithm": "scvb0"}, ["-k", "4", "--algorithm", "scvb0"]),
    "hdp": ({"n_components": 5}, ["--model", "hdp", "-k", "5"]),
    "ctm": ({"n_components": 3}, ["--model", "ctm", "-k", "3"]),
}


@needs_sklearn
@pytest.mark.parametrize("case", list(CASES))
def test_same_topics_scores_and_proportions_as_the_command_line(case, tmp_path):
    """fit(X) = `prepare` X + `fit` (equal `export` bytes); score = `eval`; transform = `infer`."""
    kind = case.split("-")[0]
    given, flags = CASES[case]
    X = counts(150, 60, 1, empty=(3, 77, 149))
    est = ESTIMATORS[kind](**given, passes=2, batch_size=40, seed=3)
    assert est.fit(sp.csr_matrix(X), vocabulary=VOCAB) is est
    est.save(tmp_path / "py")
    (tmp_path / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    corpus = prepare(tmp_path / "cli", X, tmp_path / "vocab.txt")
    run("fit", corpus, *flags, "--passes", "2", "--batch-size", "40", "--seed", "3", "-o", tmp_path / "model")
    for name in ("model", "py"):
        run("export", tmp_path / name, "-o", tmp_path / f"{name}.npy")
    for suffix in (".npy", ".vocab.txt", ".weights.tsv"):
        assert (tmp_path / f"py{suffix}").read_bytes() == (tmp_path / f"model{suffix}").read_bytes()
    assert np.array_equal(est.components_, lambda_of(tmp_path / "model").T)
    assert est.n_iter_ == 2 and est.n_batch_iter_ == json.loads(run("info", tmp_path / "model", "--json"))["step"]
    assert list(est.get_feature_names_out()) == [f"{type(est).__name__.lower()}{k}" for k in range(given["n_components"])]

    Xh = counts(40, 60, 2, empty=(0, 5))
    heldout = prepare(tmp_path / "heldout", Xh, tmp_path / "vocab.txt")
    reported = json.loads(run("eval", tmp_path / "model", heldout, "--json"))
    assert est.score(Xh) == reported["per_word_ll"]
    assert est.perplexity(Xh) == pytest.approx(math.exp(-reported["per_word_ll"]), rel=1e-12)
    run("infer", tmp_path / "model", heldout, "-o", tmp_path / "theta.npy")
    theta = est.transform(sp.csr_matrix(Xh))
    kept = [i for i in range(Xh.shape[0]) if i not in (0, 5)]
    assert np.array_equal(theta[kept], np.load(tmp_path / "theta.npy"))
    assert theta.shape == (40, est.model_.n_topics)
    assert np.all(np.isfinite(theta)) and np.allclose(theta.sum(axis=1), 1.0)   # empty rows too
    assert np.array_equal(est.fit_transform(X, vocabulary=VOCAB), est.transform(X))


@needs_sklearn
def test_fit_corpus_load_and_save_share_model_folders_with_the_command_line(tmp_path):
    X = counts(120, 60, 4)
    corpus = prepare(tmp_path / "c", X)
    run("fit", corpus, "-k", "3", "--batch-size", "30", "--seed", "5", "--max-iter", "50", "--passes", "1",
        "-o", tmp_path / "cli")
    est = LDA(n_components=3, batch_size=30, seed=5, max_iter=50, passes=1).fit_corpus(corpus)
    assert np.array_equal(est.components_, lambda_of(tmp_path / "cli").T)
    assert est.n_features_in_ == 60 and est.model_.settings["corpus"] == str(corpus.resolve())

    loaded = LDA.load(tmp_path / "cli")
    assert loaded.get_params()["n_components"] == 3 and loaded.seed == 5 and loaded.max_iter == 50
    assert loaded.local == "meanfield" and loaded.batch_size == 30
    assert np.array_equal(loaded.transform(X), est.transform(X))
    assert loaded.score(X) == est.score(X)
    refit = LDA(**dict(loaded.get_params(), passes=1)).fit_corpus(corpus)    # its parameters (the run's
    # limits are not the model's) train it again
    assert np.array_equal(refit.components_, est.components_)
    with pytest.raises(ValueError, match="holds a lda model"):
        HDP.load(tmp_path / "cli")
    # a learned prior loads as "auto" and a default one as None, so a clone learns it or takes 1/K
    assert loaded.alpha is None and loaded.eta == 0.01
    run("fit", corpus, "-k", "3", "--batch-size", "30", "--passes", "1", "--alpha", "auto", "--eta", "auto",
        "-o", tmp_path / "auto")
    learned = LDA.load(tmp_path / "auto")
    assert (learned.alpha, learned.eta) == ("auto", "auto")
    run("fit", corpus, "-k", "3", "--batch-size", "30", "--passes", "1", "--alpha", "0.7", "-o", tmp_path / "given")
    assert LDA.load(tmp_path / "given").alpha == 0.7
    run("fit", corpus, "--model", "hdp", "-k", "8", "--batch-size", "30", "--passes", "1", "-o", tmp_path / "hdp")
    assert HDP.load(tmp_path / "hdp").alpha is None

    est.save(tmp_path / "py")
    saved = [json.loads(line) for line in (tmp_path / "py" / "metrics.jsonl").read_text().splitlines()]
    cli_saved = (tmp_path / "cli" / "metrics.jsonl").read_text().splitlines()
    assert len(saved) == len(cli_saved) and saved[-1]["event"] == "summary" and saved[-1]["docs"] == 120
    info = json.loads(run("info", tmp_path / "py", "--json"))
    assert info["model"] == "lda" and info["topics"] == 3 and info["local"] == "meanfield"
    topics = json.loads(run("topics", tmp_path / "py", "--json", "-n", "3"))
    assert len(topics) == 3 and all(w.startswith("w") for t in topics for w in t["words"])
    again = pickle.loads(pickle.dumps(est))
    assert np.array_equal(again.transform(X), est.transform(X))


@needs_sklearn
def test_top_words_are_those_topics_lists(tmp_path):
    """top_words(n, relevance) gives what `topicscale topics -n N --relevance R` prints, for an
    HDP (its listed topics, in its order) as for LDA."""
    X = counts(150, 60, 9)
    for est in (LDA(n_components=4, passes=2, seed=1), HDP(n_components=12, passes=2, seed=1)):
        est.fit(X, vocabulary=[f"word{i}" for i in range(60)])
        est.save(tmp_path / est.model_.kind)
        for relevance in (1.0, 0.5):
            listed = json.loads(run("topics", tmp_path / est.model_.kind, "--json", "-n", "6",
                                    "--relevance", str(relevance)))
            assert est.top_words(6, relevance) == {t["topic"]: t["words"] for t in listed}
        assert list(est.top_words(6)) == [t["topic"] for t in listed]
        assert est.top_words(6, 0.5) != est.top_words(6)
    for bad in ({"n": 0}, {"n": 2.5}, {"relevance": 1.5}, {"relevance": float("nan")}):
        with pytest.raises(ValueError, match=f"^{next(iter(bad))} must"):
            est.top_words(**bad)


@needs_sklearn
def test_a_loaded_model_checks_a_dataframes_columns_against_its_words(tmp_path):
    """A model's words (but w0, w1, ...: columns without names) load as its feature_names_in_, as
    a DataFrame's columns are in memory; X without names is taken as the words in that order."""
    pd = pytest.importorskip("pandas")
    X = counts(60, 60, 13)
    df = pd.DataFrame(X, columns=VOCAB)
    est = LDA(n_components=3, passes=1).fit(df).save(tmp_path / "df")
    loaded = LDA.load(tmp_path / "df")
    assert list(loaded.feature_names_in_) == VOCAB and loaded.n_features_in_ == 60
    for fitted in (est, loaded):
        with pytest.raises(ValueError, match="feature names should match"):
            fitted.transform(df[df.columns[::-1]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.array_equal(loaded.transform(df), est.transform(df))
        assert np.array_equal(loaded.transform(sp.csr_matrix(X)), est.transform(df))
    LDA(n_components=3, passes=1).fit(X).save(tmp_path / "plain")
    for fitted in (LDA(n_components=3, passes=1).fit(X), LDA.load(tmp_path / "plain")):
        assert not hasattr(fitted, "feature_names_in_")
        with pytest.warns(UserWarning, match="fitted without feature names"):
            fitted.transform(df)
    assert not hasattr(loaded.fit(X), "feature_names_in_")


@needs_sklearn
def test_partial_fit_continues_the_model_as_fit_init_does(tmp_path):
    X1, X2 = counts(70, 60, 6), counts(50, 60, 7, empty=(2,))
    est = LDA(n_components=3, batch_size=25, seed=2)
    est.partial_fit(X1, vocabulary=VOCAB)
    assert est.n_batch_iter_ == 3
    est.partial_fit(sp.coo_matrix(X2))
    assert est.n_batch_iter_ == 5
    (tmp_path / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    c1 = prepare(tmp_path / "1", X1, tmp_path / "vocab.txt")
    c2 = prepare(tmp_path / "2", X2, tmp_path / "vocab.txt")
    run("fit", c1, "-k", "3", "--batch-size", "25", "--seed", "2", "--passes", "1", "-o", tmp_path / "m1")
    run("fit", c2, "--init", tmp_path / "m1", "--batch-size", "25", "--seed", "2", "--passes", "1",
        "-o", tmp_path / "m2")
    assert np.array_equal(est.components_, lambda_of(tmp_path / "m2").T)
    with pytest.raises(ValueError, match="X has 59 features, but LDA is expecting 60"):
        est.partial_fit(X2[:, 1:])
    with pytest.raises(ValueError, match="vocabulary differs"):
        est.partial_fit(X2, vocabulary=VOCAB[::-1])
    before = est.components_.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("error")              # nothing set differs from the model: no warning
        LDA(**est.get_params()).partial_fit(X1, vocabulary=VOCAB).partial_fit(X2)
    est.set_params(n_components=4, alpha=0.5)
    with pytest.warns(UserWarning) as caught:
        est.partial_fit(X2)
    assert [str(w.message).split(":")[0] for w in caught] == [
        "n_components=4 differs from the fitted model's 3", "alpha=0.5 differs from the fitted model's 0.3333333333333333"]
    assert est.components_.shape == before.shape


def planted(n_docs, n_words, n_topics, length, seed):
    """Documents of `length` tokens drawn from LDA with n_topics planted topics (dense counts)."""
    rng = np.random.default_rng(seed)
    X = np.zeros((n_docs, n_words), dtype=np.int64)
    for i, (ids, c) in enumerate(lda_documents(planted_topics(n_topics, n_words, rng), n_docs, length, 0.3, rng)):
        X[i, ids] = c
    return X


@needs_sklearn
def test_partial_fit_streams_a_corpus_of_total_samples_documents_as_one_pass_of_fit(tmp_path):
    """Chunks of 100 of 2000 documents, each call's statistics scaled to D = total_samples: held-out
    as fit's one pass (the mean of three seeds; a seed's differs by its local optimum); each scaled to
    its own 100 documents (the default), the topics stay near their start and score far lower."""
    X = planted(2400, 100, 8, 50, 3)
    train, heldout = X[:2000], X[2000:]
    scores = {"fit": [], 2000: [], None: []}
    for seed in range(3):
        given = dict(n_components=8, batch_size=50, seed=seed, local="meanfield")
        scores["fit"].append(LDA(passes=1, **given).fit(train).score(heldout))
        for total in (2000, None):
            est = LDA(total_samples=total, **given)
            for start in range(0, 2000, 100):
                est.partial_fit(train[start:start + 100])
            scores[total].append(est.score(heldout))
    fit, streamed, unscaled = (np.mean(scores[k]) for k in ("fit", 2000, None))
    assert abs(streamed - fit) < 0.03 and unscaled < streamed - 0.1
    assert est.model_.settings.get("total_samples") is None
    est.set_params(total_samples=2000).partial_fit(train[:100]).save(tmp_path / "m")
    loaded = LDA.load(tmp_path / "m")
    assert est.model_.settings["total_samples"] == loaded.total_samples == 2000
    assert "total_samples" not in loaded.fit(train[:100]).model_.settings      # fit takes its own corpus's


@needs_sklearn
def test_a_loaded_model_continues_with_partial_fit_as_the_fitted_estimator_does(tmp_path):
    """What a fit given none chooses (polish auto, the HDP's merges) loads as None, as the fitted
    estimator's parameters have it, so partial_fit continues a loaded model as it does the fitted
    one; a polish given loads as given and is refused by both. Later calls take the model's own
    start (as `fit --init` does), so a model continued from the assignment start goes on."""
    X1, X2 = counts(200, 60, 11), counts(60, 60, 12)
    for cls in (LDA, HDP):
        est = cls(n_components=4, batch_size=50, seed=1).fit(X1, vocabulary=VOCAB)
        assert est.model_.settings["polish"] == "auto" and est.model_.settings.get("merge", True)
        est.save(tmp_path / cls.__name__)
        loaded = cls.load(tmp_path / cls.__name__)
        assert loaded.polish is None and getattr(loaded, "merge", None) is None
        assert getattr(loaded, "start", None) is None and loaded.local == est.model_.settings["local"]
        assert np.array_equal(loaded.partial_fit(X2).components_, est.partial_fit(X2).components_)
    corpus = prepare(tmp_path / "c", X1)
    run("fit", corpus, "-k", "3", "--start", "assignment", "--polish", "2", "--passes", "1", "-o", tmp_path / "a")
    given = LDA.load(tmp_path / "a")
    assert (given.start, given.polish) == ("assignment", 2)
    for est in (given, LDA(n_components=3, start="assignment", polish=2, passes=1).fit(X1)):
        with pytest.raises(ValueError, match="polish sweeps a whole corpus"):
            est.partial_fit(X2)
    run("fit", corpus, "--init", tmp_path / "a", "--passes", "1", "-o", tmp_path / "b")
    continued = LDA.load(tmp_path / "b")
    assert (continued.start, continued.polish) == ("assignment", 0)
    assert continued.n_batch_iter_ == 2 and continued.partial_fit(X2).n_batch_iter_ == 3


# ------------------------------------------------------------------ input
@needs_sklearn
def test_bad_input_raises_scikit_learns_errors():
    X = counts(30, 20, 8).astype(float)
    est = LDA(n_components=2).fit(X)
    negative, nan = X.copy(), X.copy()
    negative[1, 2], nan[0, 0] = -1, np.nan
    for method in (LDA(n_components=2).fit, est.transform, est.score, LDA(n_components=2).partial_fit):
        with pytest.raises(ValueError, match="Negative values in data passed to LDA"):
            method(negative)
        with pytest.raises(ValueError, match="Input X contains NaN"):
            method(nan)
        with pytest.raises(ValueError, match="0 sample"):
            method(np.zeros((0, 20)))
        with pytest.raises(ValueError, match="0 feature"):
            method(np.zeros((3, 0)))
    for method in (est.transform, est.score):
        with pytest.raises(ValueError, match="X has 19 features, but LDA is expecting 20 features"):
            method(X[:, 1:])
    with pytest.raises(ValueError, match="X holds no counts"):
        LDA().fit(np.full((4, 5), 0.4))
    with pytest.raises(ValueError, match="vocabulary has 3 words"):
        LDA().fit(X, vocabulary=["a", "b", "c"])
    with pytest.raises(ValueError, match="duplicate words"):
        LDA().fit(X, vocabulary=["a"] * 20)


@needs_sklearn
def test_a_vocabulary_mapping_words_to_columns_labels_each_column_with_its_word():
    """CountVectorizer.vocabulary_ ({word: column}, not in column order) as a list of its words."""
    X = counts(40, 20, 8)
    words = [f"word{i}" for i in range(20)]
    by_column = {w: i for i, w in sorted(enumerate(words), key=lambda iw: iw[1][::-1])}
    assert list(by_column) != words
    est = LDA(n_components=2, passes=1).fit(X, vocabulary=by_column)
    assert est.model_.vocab == words
    est.partial_fit(X, vocabulary={w: np.int64(i) for w, i in by_column.items()})
    for bad in ({"a": 0, "b": 2}, {"a": 0, "b": 0}, {"a": 0, "b": 1.0}):
        with pytest.raises(ValueError, match="its values must be the columns 0 to 1, each once"):
            LDA().fit(X[:, :2], vocabulary=bad)


def test_fractional_counts_are_rounded_to_whole_counts():
    rows = matrix.as_rows(np.array([[0.5, 1.5, 2.5, 0.49, 3.0], [0.2, 0.0, 0.0, 0.0, 0.0]]))
    assert rows.indptr.tolist() == [0, 3, 3]
    assert rows.indices.tolist() == [1, 2, 4] and rows.counts.tolist() == [2.0, 2.0, 3.0]


@needs_sklearn
def test_fractional_counts_fit_and_transform_as_their_rounding():
    X = counts(60, 30, 9)
    noisy = np.where(X > 0, X + 0.3, 0.2)
    a, b = LDA(n_components=3, seed=1).fit(X), LDA(n_components=3, seed=1).fit(noisy)
    assert np.array_equal(a.components_, b.components_)
    assert np.array_equal(a.transform(X), b.transform(noisy))


def kernel_signatures():
    """{(module, kernel): number of compiled specialisations} of every numba kernel."""
    import numba.core.dispatcher
    import topicscale.kernels as kernels
    out = {}
    for info in pkgutil.iter_modules(kernels.__path__):
        module = importlib.import_module(f"topicscale.kernels.{info.name}")
        for name, obj in vars(module).items():
            if isinstance(obj, numba.core.dispatcher.Dispatcher):
                out[(info.name, name)] = len(obj.signatures)
    return out


@needs_sklearn
def test_any_dtype_format_or_memory_of_x_runs_the_kernels_compiled_for_the_shards(tmp_path):
    from sklearn.utils._testing import create_memmap_backed_data
    X = counts(60, 25, 10, empty=(4,))
    reference = LDA(n_components=3, seed=4).fit(X.astype(np.float64))
    theta, score = reference.transform(X.astype(np.float64)), reference.score(X.astype(np.float64))
    before = kernel_signatures()
    variants = [X.astype(np.float32), X.astype(np.int32), X.astype(np.uint8), np.asfortranarray(X),
                create_memmap_backed_data(X.astype(np.float32)), X.astype(object)]
    variants += [fmt(X.astype(dtype)) for fmt in (sp.csr_matrix, sp.csc_matrix, sp.coo_matrix, sp.lil_matrix,
                                                  sp.dok_matrix, sp.bsr_matrix, sp.dia_matrix, sp.csr_array)
                 for dtype in (np.float32, np.int64)]
    big_index = sp.csr_matrix(X)
    big_index.indices, big_index.indptr = big_index.indices.astype(np.int64), big_index.indptr.astype(np.int64)
    variants.append(big_index)
    for i, V in enumerate(variants):
        assert np.array_equal(reference.transform(V), theta) and reference.score(V) == score
        if i % 4 == 0:                              # fit converts X as transform and score do
            assert np.array_equal(LDA(n_components=3, seed=4).fit(V).components_, reference.components_)
    boolean = LDA(n_components=3, seed=4).fit(X > 0)
    assert np.allclose(boolean.transform(X > 0).sum(axis=1), 1.0) and np.isfinite(boolean.score(X > 0))
    unpickled = create_memmap_backed_data(reference)          # a read-only memory-mapped model
    assert np.array_equal(unpickled.transform(X), theta)
    assert kernel_signatures() == before


# ------------------------------------------------------------------ scikit-learn
# check_estimator fits about 70 tiny models: one numba thread (it does not change a model) and
# temporary folders in memory (see the fixture above) keep that to seconds. HDP and CTM with
# fewer topics than their defaults: CTM's document step with K = 100 alone takes 40 s.
CHECKED = {"lda": {}, "hdp": {"n_components": 10}, "ctm": {"n_components": 5}}


@needs_sklearn
@pytest.mark.parametrize("kind", list(CHECKED))
def test_scikit_learns_estimator_checks_pass(kind, capsys):
    from sklearn.utils.estimator_checks import check_estimator
    estimator = ESTIMATORS[kind](threads=1, **CHECKED[kind])
    t0 = time.perf_counter()
    check_estimator(estimator)              # raises on any failed check; none is expected to fail
    with capsys.disabled():
        print(f"\ncheck_estimator({estimator!r}): {time.perf_counter() - t0:.1f} s")


@needs_sklearn
def test_the_array_api_check_check_estimator_skips_passes_where_it_can_run():
    """check_estimator skips check_array_api_input unless SCIPY_ARRAY_API=1 was set before scipy
    was imported: run it in a process of its own."""
    code = """if True:
        import inspect, unittest
        from sklearn.utils.estimator_checks import check_array_api_input as check
        from topicscale import LDA
        loose = {"expect_only_array_outputs": False}
        try:
            check("LDA", LDA(threads=1), array_namespace="numpy",
                  **(loose if "expect_only_array_outputs" in inspect.signature(check).parameters else {}))
            print("passed")
        except (ImportError, unittest.SkipTest) as exc:       # older scikit-learn: no array API
            print(f"skipped: {exc}")"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, SCIPY_ARRAY_API="1"))
    if out.stdout.startswith("skipped"):
        pytest.skip(out.stdout.strip())
    assert out.stdout.strip() == "passed", out.stderr[-2000:]


@needs_sklearn
def test_in_a_pipeline_after_countvectorizer_and_in_grid_search():
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import Pipeline
    with gzip.open(SOTU, "rt", encoding="utf-8") as fh:
        texts = [json.loads(next(fh))["text"] for _ in range(400)]
    pipe = Pipeline([("counts", CountVectorizer(min_df=3, stop_words="english")),
                     ("lda", LDA(n_components=3, passes=2, batch_size=100, seed=0))])
    theta = pipe.fit_transform(texts)
    assert theta.shape == (400, 3) and np.allclose(theta.sum(axis=1), 1.0)
    assert pipe["lda"].n_features_in_ == len(pipe["counts"].vocabulary_)
    assert list(pipe.get_feature_names_out()) == ["lda0", "lda1", "lda2"]
    assert np.isfinite(pipe.score(texts[:50]))
    search = GridSearchCV(pipe, {"lda__n_components": [2, 5]}, cv=2).fit(texts)
    scores = search.cv_results_["mean_test_score"]
    assert np.all(np.isfinite(scores)) and search.best_params_["lda__n_components"] in (2, 5)
    assert search.best_estimator_["lda"].components_.shape[0] == search.best_params_["lda__n_components"]


@needs_sklearn
def test_n_iter_counts_passes_over_the_documents_trained_on():
    """Trained until it stops improving, a fit of 2400 documents holds 120 aside to score its
    passes: n_iter_ is whole passes over the other 2280."""
    est = LDA(n_components=4, batch_size=200, seed=1).fit(counts(2400, 60, 5))
    assert est.n_iter_ >= 3 and est.n_iter_ == int(est.n_iter_)
