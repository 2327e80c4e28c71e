"""Bayesian logistic regression (topicscale.classify): the derivatives and optima of Laplace,
delta and Jaakkola-Jordan, recovery of known coefficients, predictive integrals, the
hierarchical model, input files and the `classify` commands end to end."""
import gzip
import json
import os
import threading
from pathlib import Path

import numpy as np
import pytest
from scipy import integrate
from scipy.special import expit, log_expit

from clirun import run
from topicscale.classify import logistic as L
from topicscale.classify.data import Design, read_column, read_features
from topicscale.classify.hierarchical import fit_hierarchical, m_step
from topicscale.classify.model import Classifier
from topicscale.errors import InputError

SOTU = Path(__file__).resolve().parent.parent / "data" / "sotu.jsonl.gz"


def synthetic(n, theta, rng):
    T = np.hstack([np.ones((n, 1)), rng.standard_normal((n, len(theta) - 1))])
    y = (rng.random(n) < expit(T @ theta)).astype(float)
    return T, y


@pytest.fixture(scope="module")
def small():
    """A small problem (posterior far from Gaussian enough for the methods to differ)."""
    rng = np.random.default_rng(7)
    T, y = synthetic(40, np.array([0.3, 2.0, -1.5]), rng)
    prior_mean = np.array([0.1, -0.2, 0.3])
    A = rng.standard_normal((3, 3))
    prior_precision = A @ A.T / 3 + np.eye(3)
    return T, y, prior_mean, prior_precision


def numeric_gradient(fun, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in range(len(x)):
        e = np.zeros_like(x)
        e[i] = eps
        g[i] = (fun(x + e) - fun(x - e)) / (2 * eps)
    return g


# ------------------------------------------------------------------------------ Laplace
def test_gradient_and_hessian_match_finite_differences(small):
    T, y, m0, P0 = small
    theta = np.array([0.4, -0.7, 1.1])
    g, H = L.gradient_hessian(theta, T, y, m0, P0)
    f = lambda t: L.log_joint(t, T, y, m0, P0)
    np.testing.assert_allclose(g, numeric_gradient(f, theta), rtol=1e-6, atol=1e-7)
    H_num = np.array([numeric_gradient(lambda t: L.gradient_hessian(t, T, y, m0, P0)[0][i], theta)
                      for i in range(3)])
    np.testing.assert_allclose(H, H_num, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(H, H.T)


def test_laplace_mode_is_a_stationary_point_with_the_inverse_hessian_as_covariance(small):
    T, y, m0, P0 = small
    q = L.laplace(T, y, m0, P0)
    f = lambda t: L.log_joint(t, T, y, m0, P0)
    assert np.max(np.abs(numeric_gradient(f, q.mean))) < 1e-6
    _, H = L.gradient_hessian(q.mean, T, y, m0, P0)
    np.testing.assert_allclose(q.cov @ -H, np.eye(3), atol=1e-10)
    for d in np.eye(3):                                    # a maximum, not a saddle
        assert f(q.mean + 0.01 * d) < f(q.mean) and f(q.mean - 0.01 * d) < f(q.mean)


# -------------------------------------------------------------------------------- delta
def test_delta_gradient_matches_finite_differences(small):
    T, y, m0, P0 = small
    mu = np.array([0.2, 1.0, -0.5])
    g, _, _ = L.delta_gradient(mu, T, y, m0, P0)
    numeric = numeric_gradient(lambda m: L.delta_objective(m, T, y, m0, P0), mu)
    np.testing.assert_allclose(g, numeric, rtol=1e-5, atol=1e-7)


def test_delta_mean_is_stationary_for_eq17_and_differs_from_laplace(small):
    T, y, m0, P0 = small
    q = L.delta(T, y, m0, P0)
    lap = L.laplace(T, y, m0, P0)
    # eq. 17 as a function of mu with Sigma held at the fitted one: stationary at mu
    obj = lambda m: L.delta_objective(m, T, y, m0, P0, cov=q.cov)
    assert np.max(np.abs(numeric_gradient(obj, q.mean))) < 1e-5
    # and in Sigma: Sigma = -hess f(mu)^-1, so perturbing it lowers eq. 17
    best = obj(q.mean)
    for scale in (0.9, 1.1):
        assert L.delta_objective(q.mean, T, y, m0, P0, cov=scale * q.cov) < best
    # the profiled objective is higher than at the Laplace mode, and the means differ
    assert L.delta_objective(q.mean, T, y, m0, P0) > L.delta_objective(lap.mean, T, y, m0, P0) + 1e-4
    assert np.linalg.norm(q.mean - lap.mean) > 0.02
    assert np.max(np.abs(numeric_gradient(lambda t: L.log_joint(t, T, y, m0, P0), q.mean))) > 1e-3


# ------------------------------------------------------------------- Jaakkola and Jordan
def test_jj_bound_is_below_log_sigmoid_and_tight_at_xi_equal_to_abs_x():
    x = np.linspace(-8, 8, 161)[:, None]
    xi = np.linspace(-9, 9, 181)[None, :]
    bound = L.jj_log_sigmoid_bound(x, xi)
    assert np.all(bound <= log_expit(x) + 1e-12)
    np.testing.assert_allclose(L.jj_log_sigmoid_bound(x[:, 0], np.abs(x[:, 0])), log_expit(x[:, 0]), atol=1e-12)
    # the best xi on the grid is |x| (the grid holds both signs: the bound is even in xi)
    best = np.abs(xi[0, np.argmax(bound, axis=1)])
    np.testing.assert_allclose(best, np.abs(x[:, 0]), atol=0.051)
    assert L.jj_lambda(0.0) == pytest.approx(0.125) and L.jj_lambda(1e-7) == pytest.approx(0.125)


def test_jj_marginal_bound_is_below_the_exact_log_evidence_and_em_raises_it():
    rng = np.random.default_rng(1)
    T = np.hstack([np.ones((25, 1)), rng.standard_normal((25, 1))])
    y = (rng.random(25) < expit(T @ np.array([0.5, 1.5]))).astype(float)
    m0, P0 = np.zeros(2), np.eye(2)

    def joint(b, a):
        th = np.array([a, b])
        return np.exp(L.log_joint(th, T, y, m0, P0)) / (2 * np.pi)    # N(0, I) normalised
    exact = np.log(integrate.dblquad(joint, -6, 6, -6, 6, epsabs=1e-12)[0])
    q = L.jj(T, y, m0, P0)
    history = np.array(q.info["bound_history"])
    assert np.all(np.diff(history) >= -1e-9)                      # EM never lowers the bound
    assert q.info["bound"] < exact
    assert exact - q.info["bound"] < 0.5                          # ... and it is not loose
    # at the fixed point xi_n^2 = E_q[(theta^T t_n)^2]
    np.testing.assert_allclose(q.info["xi"] ** 2, np.sum((T @ q.cov) * T, 1) + (T @ q.mean) ** 2, rtol=1e-6)


# ------------------------------------------------------------ recovery and predictions
@pytest.mark.parametrize("method", L.METHODS)
def test_every_method_recovers_known_coefficients(method):
    rng = np.random.default_rng(11)
    truth = np.array([0.5, 1.5, -1.0, 0.0])
    T, y = synthetic(3000, truth, rng)
    q = L.fit_posterior(method, T, y, np.zeros(4), np.eye(4), bbvi_options={"n_iter": 1500})
    sd = np.sqrt(np.diag(q.cov))
    assert np.all(np.abs(q.mean - truth) < 0.15), q.mean
    assert np.all(sd < 0.1) and np.all(sd > 0.02)
    lap = L.laplace(T, y, np.zeros(4), np.eye(4))
    np.testing.assert_allclose(q.mean, lap.mean, atol=0.03)


def test_predictions_integrate_over_the_posterior():
    rng = np.random.default_rng(2)
    T, y = synthetic(60, np.array([0.0, 2.0, 0.0]), rng)
    q = L.laplace(T, y, np.zeros(3), np.eye(3))
    test = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 6.0], [1.0, 1.0, -6.0]])   # the last two: far from the data
    p_int = np.exp(L.predict_log_proba(q, test)[0])
    p_plug = np.exp(L.predict_log_proba(q, test, "plugin")[0])
    m, s = L.activation(q.mean, q.cov, test)
    assert s[1] > 2 * s[0] and s[2] > 2 * s[0]
    # integrating pulls towards 1/2, most for the uncertain points
    assert np.all(np.abs(p_int - 0.5) < np.abs(p_plug - 0.5))
    shift = np.abs(p_int - p_plug)
    assert shift[1] > 2 * shift[0] and shift[2] > 2 * shift[0] and shift[1] > 0.02
    # and it is the integral: Monte Carlo over q agrees
    draws = rng.multivariate_normal(q.mean, q.cov, size=400_000)
    mc = expit(draws @ test.T).mean(axis=0)
    np.testing.assert_allclose(p_int, mc, atol=3e-3)
    # MacKay's probit approximation is close
    np.testing.assert_allclose(np.exp(L.predict_log_proba(q, test, "probit")[0]), p_int, atol=0.02)


def test_log_predictive_is_accurate_to_1e_9_also_in_the_tails():
    for m in (-60.0, -20.0, -3.0, 0.0, 0.7, 5.0, 40.0):
        for s in (0.0, 0.01, 1.0, 2.5, 10.0, 200.0):
            lp1, lp0 = L.log_predictive(m, s)
            if s == 0:
                exact = expit(m)
            else:
                f = lambda a: expit(a) * np.exp(-0.5 * ((a - m) / s) ** 2) / (s * np.sqrt(2 * np.pi))
                c = m + s * s if m + s * s < 0 else m
                lo, hi = min(m, c) - 14 * s, max(m, c) + 14 * s
                pts = [v for v in sorted({0.0, m, c}) if lo < v < hi]
                exact = integrate.quad(f, lo, hi, points=pts or None, limit=2000, epsabs=0, epsrel=1e-12)[0]
            assert abs(lp1[0] - np.log(exact)) < 1e-9, (m, s)
            assert abs(np.exp(lp1[0]) + np.exp(lp0[0]) - 1) < 1e-9


# -------------------------------------------------------------------------- hierarchical
@pytest.fixture(scope="module")
def grouped():
    rng = np.random.default_rng(1)
    M, shared = 20, np.array([0.5, 1.5, -1.0])
    truth = shared + 0.3 * rng.standard_normal((M, 3))
    parts = [synthetic(int(n), truth[m], rng) for m, n in enumerate(rng.integers(10, 40, M))]
    T = np.vstack([p[0] for p in parts])
    y = np.concatenate([p[1] for p in parts])
    g = np.concatenate([np.full(len(p[1]), m) for m, p in enumerate(parts)])
    return T, y, g, M, shared, truth, parts


@pytest.mark.parametrize("method", ["laplace", "delta", "jj"])
def test_hierarchical_finds_the_shared_mean_and_shrinks_small_groups(grouped, method):
    T, y, g, M, shared, truth, parts = grouped
    h = fit_hierarchical(T, y, g, M, method=method)
    assert h.info["converged"]
    assert np.all(np.abs(h.mu0 - shared) < 0.3), h.mu0
    separate = [L.fit_posterior(method, Tm, ym, np.zeros(3), np.eye(3)) for Tm, ym in parts]
    # shrinkage: the group estimates sit closer to mu_0 than the separate fits do
    spread_h = np.mean([np.sum((q.mean - h.mu0) ** 2) for q in h.posteriors])
    spread_s = np.mean([np.sum((q.mean - h.mu0) ** 2) for q in separate])
    assert spread_h < 0.7 * spread_s
    err_h = np.mean([np.sum((q.mean - truth[m]) ** 2) for m, q in enumerate(h.posteriors)])
    err_s = np.mean([np.sum((q.mean - truth[m]) ** 2) for m, q in enumerate(separate)])
    if method != "delta":
        # ... and closer to the truth. (Not asserted for delta: on groups of 6-40 points its
        # means overshoot the mode and, over other seeds, its hierarchical fit is sometimes
        # worse than separate fits; see benchmarks/results/classify.md.)
        assert err_h < 0.8 * err_s


def test_m_step_uses_each_groups_posterior_covariance():
    rng = np.random.default_rng(0)
    qs = [L.Posterior(rng.standard_normal(2), np.diag(rng.uniform(0.1, 2.0, 2)), "x") for _ in range(5)]
    sigma0 = np.eye(2)
    phi0, phi1, nu_extra = 0.5, 2.0, 4.0
    mu0, s0 = m_step(qs, sigma0, phi0, phi1, nu_extra)
    means = np.array([q.mean for q in qs])
    np.testing.assert_allclose(mu0, np.linalg.solve(sigma0 / (5 * phi1) + np.eye(2), means.mean(0)))
    scatter = sum(np.outer(q.mean - mu0, q.mean - mu0) + q.cov for q in qs)
    np.testing.assert_allclose(s0, (np.eye(2) / phi0 + scatter) / (5 + 2 + nu_extra - 2 - 1))
    # tighter posteriors give a tighter Sigma_0
    tight = [L.Posterior(q.mean, q.cov / 100, "x") for q in qs]
    assert np.trace(m_step(tight, sigma0, phi0, phi1, nu_extra)[1]) < np.trace(s0)


def test_classifier_predicts_new_groups_from_the_population_prior(grouped):
    T, y, g, M, shared, truth, parts = grouped
    X = T[:, 1:]
    names = [f"g{i:02d}" for i in g]
    clf = Classifier.fit(X, ["a", "b"], y, groups=names)
    assert clf.hierarchical and len(clf.groups) == M and clf.design.intercept
    new = clf.posterior_of("never-seen")
    assert new.method == "population" and np.array_equal(new.mean, clf.mu0)
    p = clf.proba(X[:3], ["g00", "never-seen", "g05"])
    assert np.all((p > 0) & (p < 1))


# -------------------------------------------------------------------------------- design
def test_design_drops_the_intercept_for_topic_proportions():
    rng = np.random.default_rng(0)
    theta = rng.dirichlet(np.ones(4), size=50)
    d = Design.fit(theta, list("abcd"))
    assert d.simplex and not d.intercept and d.names == list("abcd")
    T = d.transform(theta)
    assert T.shape == (50, 4) and np.linalg.matrix_rank(T) == 4
    np.testing.assert_allclose(T.std(0), 1.0)
    d2 = Design.fit(theta, list("abcd"), intercept="yes")
    T2 = d2.transform(theta)
    assert d2.drop_last and d2.names == ["(intercept)", "a", "b", "c"]
    assert np.linalg.matrix_rank(T2) == 4                       # full rank: no collinearity
    with_all = np.hstack([np.ones((50, 1)), theta])
    assert np.linalg.matrix_rank(with_all) == 4                 # what dropping avoids
    dense = Design.fit(rng.standard_normal((50, 3)) * [1, 10, 100] + 5, list("xyz"))
    assert dense.intercept and not dense.simplex
    Td = dense.transform(rng.standard_normal((50, 3)) * [1, 10, 100] + 5)
    assert np.all(Td[:, 0] == 1)


# --------------------------------------------------------------------------------- files
def test_reading_features_from_infer_tsv_npy_and_csv(tmp_path):
    tsv = tmp_path / "theta.tsv"
    tsv.write_text("id\ttopic_0\ttopic_1\na\t0.25\t0.75\nb\t1\t0\n")
    t = read_features(tsv)
    assert t.ids == ["a", "b"] and t.columns == ["topic_0", "topic_1"] and t.values.shape == (2, 2)
    np.save(tmp_path / "x.npy", np.array([[0.1, 0.9], [0.5, 0.5], [0.3, 0.7]]))
    (tmp_path / "x.ids.txt").write_text("p\nq\nr\n")
    t = read_features(tmp_path / "x.npy")
    assert t.ids == ["p", "q", "r"] and t.values.shape == (3, 2)
    (tmp_path / "m.csv").write_text("1.5,2\n3,4e-1\n")
    t = read_features(tmp_path / "m.csv")
    assert t.ids is None and t.values.tolist() == [[1.5, 2.0], [3.0, 0.4]]
    (tmp_path / "bad.tsv").write_text("id\tx\ty\na\t1\t2\nb\t1\toops\n")
    with pytest.raises(InputError, match=r"bad.tsv:3: column 3 \('y'\): 'oops' is not a number"):
        read_features(tmp_path / "bad.tsv")
    (tmp_path / "ragged.tsv").write_text("id\tx\ty\na\t1\t2\nb\t1\n")
    with pytest.raises(InputError, match="ragged.tsv:3: expected 3 fields, found 2"):
        read_features(tmp_path / "ragged.tsv")


def test_labels_by_row_or_by_id_with_errors_naming_file_and_line(tmp_path):
    tsv = tmp_path / "theta.tsv"
    tsv.write_text("id\tt0\tt1\na\t0.2\t0.8\nb\t0.6\t0.4\nc\t0.5\t0.5\n")
    table = read_features(tsv)
    (tmp_path / "rows.txt").write_text("1\n0\n1\n")
    assert read_column(tmp_path / "rows.txt", table) == (["1", "0", "1"], 0)
    (tmp_path / "byid.tsv").write_text("id\tlabel\nc\t0\nzz\t1\na\t1\nb\t1\n")
    assert read_column(tmp_path / "byid.tsv", table) == (["1", "1", "0"], 1)
    cases = {"two.txt": ("1\n2\n0\n", "two.txt:2: label must be 0 or 1, found '2'"),
             "short.txt": ("1\n0\n", "short.txt: 2 labels for the 3 rows"),
             "long.txt": ("1\n0\n1\n1\n", "long.txt:4: more labels than the 3 rows"),
             "missing.tsv": ("a\t1\nb\t0\n", "theta.tsv:4: id 'c' has no label in"),
             "dup.tsv": ("a\t1\nb\t0\na\t0\nc\t1\n", "dup.tsv:3: id 'a' already has a label on line 1"),
             "blank.txt": ("1\n\n0\n", "blank.txt:2: blank line")}
    for name, (content, message) in cases.items():
        (tmp_path / name).write_text(content)
        with pytest.raises(InputError) as err:
            read_column(tmp_path / name, table)
        assert message in str(err.value), str(err.value)
    (tmp_path / "binary.txt").write_bytes(b"1\n0\n\xff\xfe1\n")
    with pytest.raises(InputError, match="binary.txt:3: not valid UTF-8"):
        read_column(tmp_path / "binary.txt", table)
    with pytest.raises(InputError, match="binary.txt:3: not valid UTF-8"):
        read_features(tmp_path / "binary.txt")


# --------------------------------------------------------------------------- end to end

def one_line_error(result, *fragments):
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("topicscale: error: "), result.output
    for f in fragments:
        assert f in lines[0], lines[0]


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    """Democratic / Republican paragraphs -> LDA -> `topicscale infer` TSV, labels, groups."""
    root = tmp_path_factory.mktemp("classify")
    rows = []
    with gzip.open(SOTU, "rt", encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            d = json.loads(line)
            if i % 12 == 0 and d["party"] in ("Democratic", "Republican") and len(d["text"]) > 200:
                rows.append(d)
    (root / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in rows))
    run("prepare", root / "docs.jsonl", "--min-df", "3", "-o", root / "corpus", "-q")
    run("fit", root / "corpus", "-k", "6", "--passes", "2", "--batch-size", "200", "-q", "-o", root / "lda")
    run("infer", root / "lda", root / "corpus", "-o", root / "theta.tsv", "-q")
    ids = (root / "corpus" / "ids.txt").read_text().split()
    party = {d["id"]: d["party"] for d in rows}
    year = {d["id"]: d["year"] for d in rows}
    # labels in another order than the features, matched by id
    (root / "labels.tsv").write_text("id\tlabel\n" + "".join(
        f"{i}\t{int(party[i] == 'Republican')}\n" for i in reversed(ids)))
    (root / "groups.tsv").write_text("".join(f"{i}\t{'pre-1932' if year[i] < 1932 else 'post-1932'}\n"
                                             for i in ids))
    return root, ids


def test_cli_fit_and_predict_on_infer_output(pipeline, tmp_path):
    root, ids = pipeline
    out = json.loads(run("classify", "fit", root / "theta.tsv", root / "labels.tsv", "-o", tmp_path / "clf",
                         "--json").output)
    assert out["intercept"] is False and out["covariates"] == [f"topic_{k}" for k in range(6)]
    assert out["rows"] == len(ids) and 0.5 < out["train_accuracy"] <= 1.0
    pred = json.loads(run("classify", "predict", tmp_path / "clf", root / "theta.tsv", "--json").output)
    assert pred["ids"] == ids
    p = np.array(pred["probabilities"])
    assert p.shape == (len(ids),) and np.all((p > 0) & (p < 1))
    # it is the classifier's integrated predictive
    clf = Classifier.load(tmp_path / "clf")
    np.testing.assert_allclose(p, clf.proba(read_features(root / "theta.tsv").values), rtol=1e-12)
    text = run("classify", "predict", tmp_path / "clf", root / "theta.tsv").output.splitlines()
    assert [l.split("\t")[0] for l in text] == ids
    assert [float(l.split("\t")[1]) for l in text] == p.tolist()        # every digit, as --json
    # features on a pipe: `infer ... | classify predict CLF -`, and a named pipe (<(infer ...))
    from click.testing import CliRunner
    from topicscale.cli import cli
    piped = CliRunner().invoke(cli, ["classify", "predict", str(tmp_path / "clf"), "-", "--json"],
                               input=(root / "theta.tsv").read_text())
    assert piped.exit_code == 0 and json.loads(piped.output) == pred
    fifo = tmp_path / "theta.fifo"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_text((root / "theta.tsv").read_text()), daemon=True)
    writer.start()              # a daemon: a predict that never opens the pipe fails, not hangs
    assert json.loads(run("classify", "predict", tmp_path / "clf", fifo, "--json").output) == pred
    writer.join(timeout=10)
    assert not writer.is_alive()
    info = run("classify", "info", tmp_path / "clf").output
    assert "topic_0, topic_1, topic_2" in info and "['" not in info and "{'" not in info
    # an existing classifier is kept unless --force
    r = run("classify", "fit", root / "theta.tsv", root / "labels.tsv", "-o", tmp_path / "clf", ok=False)
    one_line_error(r, "already holds a classifier", "--force")


def test_cli_fit_that_fails_numerically_or_diverges_is_one_line_and_writes_nothing(pipeline, tmp_path):
    root, _ = pipeline
    result = run("classify", "fit", root / "theta.tsv", root / "labels.tsv", "--method", "jj",
                 "--prior-variance", "1e300", "-o", tmp_path / "jj", ok=False)
    one_line_error(result, "the jj fit failed numerically", "--prior-variance")
    result = run("classify", "fit", root / "theta.tsv", root / "labels.tsv", "--method", "bbvi",
                 "--step-size", "1e4", "--iterations", "200", "-o", tmp_path / "bbvi", ok=False)
    one_line_error(result, "the bbvi fit diverged", "--step-size")
    assert not (tmp_path / "jj").exists() and not (tmp_path / "bbvi").exists()


def test_cli_hierarchical_with_groups(pipeline, tmp_path):
    root, ids = pipeline
    out = json.loads(run("classify", "fit", root / "theta.tsv", root / "labels.tsv", "--groups",
                         root / "groups.tsv", "--method", "delta", "-o", tmp_path / "h", "--json").output)
    assert out["hierarchical"] and set(out["group_sizes"]) == {"pre-1932", "post-1932"}
    assert out["em_converged"] and out["em_iterations"] > 2
    r = run("classify", "fit", root / "theta.tsv", root / "labels.tsv", "--groups", root / "groups.tsv",
            "--method", "delta", "--max-iter", "2", "-o", tmp_path / "h2", "--json")
    assert json.loads(r.stdout)["em_converged"] is False
    assert "warning: the variational EM stopped at --max-iter 2 before mu_0 and Sigma_0" in r.stderr
    assert "every label" not in r.stderr
    (tmp_path / "ones.tsv").write_text("".join(f"{i}\t1\n" for i in ids))
    r = run("classify", "fit", root / "theta.tsv", tmp_path / "ones.tsv", "-o", tmp_path / "ones")
    assert f"warning: every label in {tmp_path / 'ones.tsv'} is 1" in r.stderr
    r = run("classify", "predict", tmp_path / "h", root / "theta.tsv", ok=False)
    one_line_error(r, "hierarchical", "--groups")
    pred = json.loads(run("classify", "predict", tmp_path / "h", root / "theta.tsv", "--groups",
                          root / "groups.tsv", "--json").output)
    assert pred["ids"] == ids and len(pred["probabilities"]) == len(ids)
    info = json.loads(run("classify", "info", tmp_path / "h", "--json").output)
    assert set(info["coefficients"]) == {"pre-1932", "post-1932", "(population mean mu_0)"}


def test_cli_bad_label_line_and_corrupted_classifier(pipeline, tmp_path):
    root, ids = pipeline
    lines = (root / "labels.tsv").read_text().splitlines()
    lines[5] = lines[5].split("\t")[0] + "\tmaybe"
    (tmp_path / "bad.tsv").write_text("\n".join(lines) + "\n")
    r = run("classify", "fit", root / "theta.tsv", tmp_path / "bad.tsv", "-o", tmp_path / "c", ok=False)
    one_line_error(r, f"{tmp_path / 'bad.tsv'}:6:", "label must be 0 or 1, found 'maybe'")
    assert not (tmp_path / "c").exists()
    run("classify", "fit", root / "theta.tsv", root / "labels.tsv", "-o", tmp_path / "c", "--method", "jj")
    data = bytearray((tmp_path / "c" / "classifier.npz").read_bytes())
    data[len(data) // 2] ^= 0xFF
    (tmp_path / "c" / "classifier.npz").write_bytes(bytes(data))
    r = run("classify", "predict", tmp_path / "c", root / "theta.tsv", ok=False)
    one_line_error(r, "classifier.npz", "corrupted")
    (tmp_path / "empty").mkdir()
    one_line_error(run("classify", "predict", tmp_path / "empty", root / "theta.tsv", ok=False),
                   "not a topicscale classifier")
    # a folder where a file goes is named for what it is, not "no such file"
    one_line_error(run("classify", "fit", root / "lda", root / "labels.tsv", "-o", tmp_path / "d", ok=False),
                   f"{root / 'lda'}: a model folder, not a features file", "topicscale infer MODEL CORPUS")
    one_line_error(run("classify", "fit", root / "corpus", root / "labels.tsv", "-o", tmp_path / "d", ok=False),
                   f"{root / 'corpus'}: a corpus folder, not a features file")
    one_line_error(run("classify", "fit", root / "theta.tsv", tmp_path / "empty", "-o", tmp_path / "d", ok=False),
                   f"{tmp_path / 'empty'}: a folder, not a labels file")
    one_line_error(run("classify", "fit", root / "theta.tsv", tmp_path / "none.tsv", "-o", tmp_path / "d",
                       ok=False), "none.tsv: no such file")


def test_cli_bbvi_is_reproducible(pipeline, tmp_path):
    root, _ = pipeline
    for name, seed in (("a", "3"), ("b", "3"), ("c", "4")):
        run("classify", "fit", root / "theta.tsv", root / "labels.tsv", "--method", "bbvi", "--iterations",
            "200", "--seed", seed, "-o", tmp_path / name)
    a, b, c = (Classifier.load(tmp_path / n) for n in "abc")
    assert np.array_equal(a.posteriors[0].mean, b.posteriors[0].mean)
    assert not np.array_equal(a.posteriors[0].mean, c.posteriors[0].mean)
    assert np.count_nonzero(a.posteriors[0].cov - np.diag(np.diag(a.posteriors[0].cov))) == 0   # mean-field


@pytest.mark.parametrize("extra, message", [
    (["--phi0", "0.5", "--max-iter", "3"], "--phi0, --max-iter go with --groups"),
    (["--tol", "0.5"], "--tol goes with --groups"),
    (["--samples", "5", "--seed", "2"], "--samples, --seed go with --method bbvi"),
    (["--method", "jj", "--step-size", "0.1"], "--step-size goes with --method bbvi"),
])
def test_cli_refuses_options_the_fit_would_ignore(pipeline, tmp_path, extra, message):
    """Hierarchical options without --groups and black-box VI's without --method bbvi changed
    nothing (the same coefficients, not recorded); they are refused, as `fit` refuses options."""
    root, _ = pipeline
    r = run("classify", "fit", root / "theta.tsv", root / "labels.tsv", *extra, "-o", tmp_path / "c", ok=False)
    assert r.exit_code == 2 and message in r.output.strip().splitlines()[-1], r.output
    assert not (tmp_path / "c").exists()
