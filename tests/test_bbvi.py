"""Black-box variational inference (topicscale.inference.bbvi): exact posteriors of conjugate
models, the score functions, the variance reduction, minibatches with local variables,
determinism."""
import numpy as np
import pytest
from scipy.special import betaln, digamma

from topicscale.classify.logistic import LogisticBBVI
from topicscale.inference import bbvi as bb


class Coins:
    """K independent Beta-Bernoulli coins: pi_k ~ Beta(a0, b0), heads_k ~ Binomial(n_k, pi_k).

    One variational factor per coin; each coin's prior and likelihood touch only its own factor.
    """

    def __init__(self, heads, n, a0=1.0, b0=1.0):
        self.heads, self.n = np.asarray(heads, float), np.asarray(n, float)
        self.a0, self.b0 = a0, b0
        self.K = len(self.heads)
        self._families = {"pi": bb.Beta(self.K)}

    def variables(self):
        return self._families

    def terms(self, z, batch):
        pi, idx = z["pi"], np.arange(self.K)
        prior = (self.a0 - 1) * np.log(pi) + (self.b0 - 1) * np.log1p(-pi) - betaln(self.a0, self.b0)
        lik = self.heads * np.log(pi) + (self.n - self.heads) * np.log1p(-pi)
        return [bb.Term(prior, {"pi": idx}), bb.Term(lik, {"pi": idx})]

    def exact(self):
        return self.a0 + self.heads, self.b0 + self.n - self.heads

    def elbo(self, params):
        """The ELBO in closed form (for the exact gradient)."""
        a, b = np.exp(params[:, 0]), np.exp(params[:, 1])
        al, be = self.exact()
        elog, elog1 = digamma(a) - digamma(a + b), digamma(b) - digamma(a + b)
        entropy = betaln(a, b) - (a - 1) * digamma(a) - (b - 1) * digamma(b) + (a + b - 2) * digamma(a + b)
        return float(np.sum((al - 1) * elog + (be - 1) * elog1 - betaln(self.a0, self.b0) + entropy))


class LinearRegression:
    """y ~ N(X w, noise), w ~ N(0, prior_var I); q(w) a full-covariance Gaussian (one factor)."""

    def __init__(self, X, y, noise=1.0, prior_var=1.0):
        self.X, self.y, self.noise, self.prior_var = X, y, noise, prior_var
        self.n_data = len(y)
        self._families = {"w": bb.MVNormal(X.shape[1])}

    def variables(self):
        return self._families

    def terms(self, z, batch):
        w = z["w"]
        X = self.X if batch is None else self.X[batch]
        y = self.y if batch is None else self.y[batch]
        r = y[None, :] - w @ X.T
        lik = -0.5 * r * r / self.noise - 0.5 * np.log(2 * np.pi * self.noise)
        return [bb.Term(-0.5 * np.sum(w * w, axis=1) / self.prior_var, {"w": None}),
                bb.Term(lik, {"w": None}, data=True)]

    def exact(self):
        P = self.X.T @ self.X / self.noise + np.eye(self.X.shape[1]) / self.prior_var
        S = np.linalg.inv(P)
        return S @ self.X.T @ self.y / self.noise, S


class HierarchicalNormal:
    """mu ~ N(0, tau2); z_n ~ N(mu, 1); x_n ~ N(z_n, sigma2): a global and N local variables."""

    def __init__(self, x, tau2=100.0, sigma2=1.0):
        self.x, self.tau2, self.sigma2 = x, tau2, sigma2
        self.n_data = len(x)
        self._families = {"mu": bb.Normal((1,))}

    def variables(self):
        return self._families

    def local_variables(self, batch):
        return {"z": bb.Normal((len(batch),))}

    def terms(self, z, batch):
        mu, zz, x, idx = z["mu"], z["z"], self.x[batch], np.arange(len(batch))
        return [bb.Term(-0.5 * mu * mu / self.tau2, {"mu": np.array([0])}),
                bb.Term(-0.5 * (zz - mu) ** 2, {"mu": None, "z": idx}, data=True),
                bb.Term(-0.5 * (x - zz) ** 2 / self.sigma2, {"z": idx}, data=True)]

    def mean_field_optimum(self):
        """The coordinate-ascent fixed point of the mean-field ELBO (solved exactly)."""
        N = self.n_data
        v_mu = 1.0 / (1.0 / self.tau2 + N)
        v_z = 1.0 / (1.0 + 1.0 / self.sigma2)
        m_mu = v_mu * v_z * self.x.sum() / self.sigma2 / (1.0 - N * v_mu * v_z)
        return m_mu, v_mu


@pytest.fixture(scope="module")
def coins():
    rng = np.random.default_rng(3)
    n = rng.integers(10, 80, size=8)
    return Coins(rng.binomial(n, rng.uniform(0.05, 0.95, size=8)), n, a0=2.0, b0=3.0)


def test_beta_bernoulli_matches_the_exact_posterior(coins):
    r = bb.fit(coins, n_iter=1500, n_samples=16, step_size=1.0, seed=0)
    a, b = coins.exact()
    mean, var = a / (a + b), a * b / ((a + b) ** 2 * (a + b + 1))
    np.testing.assert_allclose(r.mean("pi"), mean, rtol=0.01)
    np.testing.assert_allclose(r.variance("pi"), var, rtol=0.05)
    # the noisy ELBO estimates climbed to the exact log evidence, sum_k log B(a_k, b_k) / B(a0, b0)
    log_evidence = np.sum(betaln(a, b) - betaln(coins.a0, coins.b0))
    assert np.mean(r.elbo[-100:]) == pytest.approx(log_evidence, abs=0.05)
    assert np.mean(r.elbo[:20]) < log_evidence - 5


def test_linear_regression_full_covariance_matches_the_exact_posterior():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((80, 3))
    X[:, 2] = 0.8 * X[:, 1] + 0.6 * X[:, 2]                     # correlated posterior
    y = X @ np.array([1.0, -2.0, 0.5]) + rng.standard_normal(80)
    model = LinearRegression(X, y)
    mean, cov = model.exact()
    r = bb.fit(model, n_iter=1500, n_samples=16, step_size=0.5, seed=1)
    fam = r.families["w"]
    np.testing.assert_allclose(fam.mean(r.params["w"]), mean, atol=0.01)
    np.testing.assert_allclose(fam.covariance(r.params["w"]), cov, atol=0.05 * np.max(np.abs(cov)))
    assert fam.covariance(r.params["w"])[1, 2] / cov[1, 2] == pytest.approx(1.0, abs=0.05)


def test_minibatches_of_data_points_find_the_same_posterior():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, 2))
    y = X @ np.array([0.7, -0.3]) + rng.standard_normal(400)
    model = LinearRegression(X, y)
    mean, cov = model.exact()
    r = bb.fit(model, n_iter=2000, n_samples=16, step_size=0.3, batch_size=40, seed=2, average=0.5)
    fam = r.families["w"]
    sd = np.sqrt(np.diag(cov))
    assert np.all(np.abs(fam.mean(r.params["w"]) - mean) < 0.5 * sd)
    np.testing.assert_allclose(np.sqrt(np.diag(fam.covariance(r.params["w"]))), sd, rtol=0.3)


def test_local_variables_with_minibatches_reach_the_mean_field_optimum():
    rng = np.random.default_rng(0)
    model = HierarchicalNormal(2.0 + np.sqrt(2.0) * rng.standard_normal(100))
    m_mu, v_mu = model.mean_field_optimum()
    r = bb.fit(model, n_iter=1500, n_samples=16, step_size=1.0, batch_size=20, seed=0, local_iters=5,
               local_step_size=0.3, average=0.5)
    assert abs(r.mean("mu")[0] - m_mu) < 1.0 * np.sqrt(v_mu)
    assert 0.7 < np.sqrt(r.variance("mu")[0] / v_mu) < 1.3
    # without the N/|B| scaling of the data terms the posterior of mu would be sqrt(5) times wider
    assert r.local_params["z"].shape == (20, 2)


@pytest.mark.parametrize("family, params", [
    (bb.Normal((3,)), np.array([[0.3, -0.2], [-1.0, 0.4], [2.0, 0.0]])),
    (bb.Beta(2), np.log(np.array([[2.0, 3.0], [0.7, 1.5]]))),
    (bb.MVNormal(3), None),
])
def test_score_is_the_gradient_of_log_q_and_has_mean_zero(family, params):
    rng = np.random.default_rng(0)
    if params is None:
        params = family.init() + 0.3 * rng.standard_normal(family.init().shape)
    z = family.sample(params, rng, 5)
    score = family.score(params, z)
    eps = 1e-6
    for f in range(params.shape[0]):
        for j in range(params.shape[1]):
            up, down = params.copy(), params.copy()
            up[f, j] += eps
            down[f, j] -= eps
            numeric = (family.log_q(up, z)[:, f] - family.log_q(down, z)[:, f]) / (2 * eps)
            np.testing.assert_allclose(score[:, f, j], numeric, rtol=1e-5, atol=1e-6)
    many = family.score(params, family.sample(params, rng, 200_000))
    se = many.std(axis=0) / np.sqrt(many.shape[0])
    assert np.all(np.abs(many.mean(axis=0)) < 5 * se + 1e-9)


def _total_variance(model, params, **kw):
    draws = bb.gradient_draws(model, params, 400, 16, seed=1, **kw)
    return sum(d.var(axis=0).sum() for d in draws.values()), draws


def test_rao_blackwellization_and_control_variates_lower_the_gradient_variance(coins):
    params = {"pi": coins.variables()["pi"].init()}
    plain, d_plain = _total_variance(coins, params, rao_blackwell=False, control_variates=False)
    rb, d_rb = _total_variance(coins, params, rao_blackwell=True, control_variates=False)
    cv, _ = _total_variance(coins, params, rao_blackwell=False, control_variates=True)
    both, d_both = _total_variance(coins, params, rao_blackwell=True, control_variates=True)
    loo, d_loo = _total_variance(coins, params, rao_blackwell=True, control_variates="loo")
    assert rb < plain / 5 and cv < plain / 5 and both < rb / 2 and both < cv / 2
    assert both < loo < rb / 1.3
    # what they estimate: the exact gradient of the closed-form ELBO
    eps = 1e-6
    exact = np.zeros_like(params["pi"])
    for idx in np.ndindex(exact.shape):
        up, down = params["pi"].copy(), params["pi"].copy()
        up[idx] += eps
        down[idx] -= eps
        exact[idx] = (coins.elbo(up) - coins.elbo(down)) / (2 * eps)
    for d in (d_plain["pi"], d_rb["pi"], d_loo["pi"]):                 # unbiased
        se = d.std(axis=0) / np.sqrt(d.shape[0])
        assert np.all(np.abs(d.mean(axis=0) - exact) < 4.5 * se)
    # the paper's plug-in a* shrinks the gradient by O(1/S) (S = 16 here), in every component
    shrink = np.sum(d_both["pi"].mean(axis=0) * exact) / np.sum(exact * exact)
    assert 0.65 < shrink < 0.95


def test_control_variates_lower_the_variance_for_logistic_regression():
    rng = np.random.default_rng(0)
    T = np.hstack([np.ones((300, 1)), rng.standard_normal((300, 5))])
    y = (rng.random(300) < 0.5).astype(float)
    model = LogisticBBVI(T, y, np.zeros(6), np.eye(6))
    params = {"theta": model.variables()["theta"].init() + 0.1}
    plain, _ = _total_variance(model, params, rao_blackwell=False, control_variates=False)
    both, _ = _total_variance(model, params, rao_blackwell=True, control_variates=True)
    assert both < plain / 10


def test_same_seed_same_result(coins):
    a = bb.fit(coins, n_iter=50, n_samples=8, seed=5)
    b = bb.fit(coins, n_iter=50, n_samples=8, seed=5)
    c = bb.fit(coins, n_iter=50, n_samples=8, seed=6)
    assert np.array_equal(a.params["pi"], b.params["pi"]) and np.array_equal(a.elbo, b.elbo)
    assert not np.array_equal(a.params["pi"], c.params["pi"])


def test_blankets_follow_the_incidence_of_each_term():
    fams = {"a": bb.Normal((3,)), "b": bb.Normal((2,))}
    v = np.array([[1.0, 2.0, 4.0, 8.0]])
    terms = [bb.Term(v, {"a": np.array([0, 0, 2, 1]), "b": None}, data=True),
             bb.Term(np.array([[16.0]]), {"b": np.array([1])})]
    out = bb.blankets(fams, terms, 1, data_scale=10.0)
    np.testing.assert_allclose(out["a"], [[30.0, 80.0, 40.0]])
    np.testing.assert_allclose(out["b"], [[150.0, 166.0]])
    assert bb.total_log_joint(terms, 1, data_scale=10.0)[0] == pytest.approx(166.0)
    # an element may touch several factors of a variable (rows of an E x r index, -1 pads)
    pair = [bb.Term(np.array([[1.0, 2.0]]), {"a": np.array([[0, 2], [1, -1]])})]
    np.testing.assert_allclose(bb.blankets(fams, pair, 1)["a"], [[1.0, 2.0, 1.0]])
