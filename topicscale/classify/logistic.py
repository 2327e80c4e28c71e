"""Bayesian logistic regression: Laplace, delta-method, Jaakkola-Jordan and black-box VI.

Wang and Blei (2013), "Variational inference in nonconjugate models", section 4.2 and
appendix C. Notation (the paper's -> here):

    t_n (covariates, p-vector)  -> row n of T (N x p)
    z_n (class label)           -> y_n in {0, 1}   (z_n1 = y_n, z_n2 = 1 - y_n)
    theta (coefficients)        -> theta (p)
    mu_0, Sigma_0 (prior)       -> prior_mean, prior_precision = Sigma_0^-1
    q(theta) = N(mu, Sigma)     -> Posterior(mean, cov)

The log joint (appendix C, f of eq. 12 with the labels observed):

    f(theta) = sum_n [y_n a_n - log(1 + e^a_n)] - 1/2 (theta - mu_0)^T Sigma_0^-1 (theta - mu_0),
    a_n = theta^T t_n,
    grad f = T^T (y - sigma(a)) - Sigma_0^-1 (theta - mu_0),
    hess f = -T^T diag(w) T - Sigma_0^-1,   w_n = sigma(a_n) sigma(-a_n).

* Laplace VI (sec. 3.1, eq. 14): q = N(theta_hat, -hess f(theta_hat)^-1) at the mode theta_hat,
  found by Newton's method with a backtracking line search (f is strictly concave).
* Delta-method VI (sec. 3.2, eq. 17): maximise f(mu) + 1/2 tr(hess f(mu) Sigma) + 1/2 log|Sigma|.
  The optimal Sigma given mu is -hess f(mu)^-1, which leaves D(mu) = f(mu) - 1/2 log|-hess f(mu)|
  (+ const), whose gradient is grad f(mu) - 1/2 sum_n w'_n (t_n^T Sigma t_n) t_n with
  w'_n = w_n (1 - 2 sigma(a_n)) (appendix C). It is maximised from the Laplace mode by steps
  (-hess f)^-1 grad D with a backtracking line search; then Sigma = -hess f(mu)^-1.
* Jaakkola and Jordan (1997, 2000): log sigma(x) >= log sigma(xi) + (x - xi)/2 - lambda(xi)(x^2 - xi^2),
  lambda(xi) = (sigma(xi) - 1/2) / (2 xi); with one xi_n per observation (x = (2 y_n - 1) a_n)
  the bound is Gaussian in theta; EM alternates the Gaussian q(theta) and xi_n^2 = E_q[a_n^2].
* BBVI (topicscale.inference.bbvi): a mean-field Gaussian q(theta) = prod_j N(m_j, s_j^2),
  fitted by score-function gradients with Rao-Blackwellization, control variates, AdaGrad and
  minibatches of data points.

Predictive probabilities integrate over q: a = theta^T t is N(m, s^2) with m = mu^T t and
s^2 = t^T Sigma t, and p(y = 1 | t) = E[sigma(a)] is a one-dimensional integral, computed by
`log_predictive` to about 1e-10 (see there); `probit_predictive` is MacKay's approximation.
"""
from dataclasses import dataclass, field
import math

import numpy as np
from scipy.linalg import cho_factor, cho_solve, LinAlgError
from scipy.special import expit, log_expit, logsumexp, ndtr

from ..inference import bbvi as bb

METHODS = ("laplace", "delta", "jj", "bbvi")


@dataclass
class Posterior:
    """q(theta) = N(mean, cov) and how it was found."""
    mean: np.ndarray
    cov: np.ndarray
    method: str
    info: dict = field(default_factory=dict)


# ------------------------------------------------------------------------------ log joint
def log_joint(theta, T, y, prior_mean, prior_precision):
    """f(theta) (appendix C): log p(y | theta, T) + log N(theta | mu_0, Sigma_0) up to a constant."""
    a = T @ theta
    d = theta - prior_mean
    return float(np.sum(y * a - np.logaddexp(0.0, a)) - 0.5 * d @ prior_precision @ d)


def gradient_hessian(theta, T, y, prior_mean, prior_precision):
    """grad f and hess f (appendix C)."""
    a = T @ theta
    s = expit(a)
    w = s * (1.0 - s)
    g = T.T @ (y - s) - prior_precision @ (theta - prior_mean)
    H = -(T.T * w) @ T - prior_precision
    return g, H


def _chol_neg(H):
    try:
        return cho_factor(-H, lower=True)
    except LinAlgError:
        raise FloatingPointError("the negative Hessian is not positive definite") from None


def _inverse(chol, p):
    return cho_solve(chol, np.eye(p))


def _quad_rows(T, A):
    """t_n^T A t_n for every row of T."""
    return np.sum((T @ A) * T, axis=1)


def _logdet(chol):
    return 2.0 * float(np.sum(np.log(np.diag(chol[0]))))


# -------------------------------------------------------------------------------- Laplace
def laplace(T, y, prior_mean, prior_precision, init=None, tol=1e-10, max_iter=100):
    """Laplace variational inference (sec. 3.1, eq. 14): Newton to the mode, full covariance."""
    p = T.shape[1]
    theta = np.array(prior_mean if init is None else init, dtype=float)
    fval = log_joint(theta, T, y, prior_mean, prior_precision)
    it = 0
    for it in range(1, max_iter + 1):
        g, H = gradient_hessian(theta, T, y, prior_mean, prior_precision)
        step = cho_solve(_chol_neg(H), g)
        decrement = float(g @ step)               # Newton decrement squared
        if decrement <= 2.0 * tol:
            break
        t = 1.0
        while True:
            new = theta + t * step
            fnew = log_joint(new, T, y, prior_mean, prior_precision)
            if fnew >= fval + 1e-4 * t * decrement or t < 1e-12:
                break
            t *= 0.5
        theta, fval = new, fnew
    _, H = gradient_hessian(theta, T, y, prior_mean, prior_precision)
    cov = _inverse(_chol_neg(H), p)
    return Posterior(theta, cov, "laplace", {"iterations": it, "log_joint": fval})


# ---------------------------------------------------------------------------------- delta
def delta_objective(mu, T, y, prior_mean, prior_precision, cov=None):
    """The delta-method objective, eq. 17: f(mu) + 1/2 tr(hess f(mu) Sigma) + 1/2 log|Sigma|.

    With cov=None, Sigma = -hess f(mu)^-1 (its optimum given mu), which gives
    f(mu) - p/2 - 1/2 log|-hess f(mu)|.
    """
    _, H = gradient_hessian(mu, T, y, prior_mean, prior_precision)
    f = log_joint(mu, T, y, prior_mean, prior_precision)
    if cov is None:
        return f - 0.5 * T.shape[1] - 0.5 * _logdet(_chol_neg(H))
    sign, logdet = np.linalg.slogdet(cov)
    return f + 0.5 * float(np.sum(H * cov)) + 0.5 * logdet


def delta_gradient(mu, T, y, prior_mean, prior_precision):
    """grad of D(mu) = f(mu) - 1/2 log|-hess f(mu)| (appendix C): grad f - 1/2 sum_n w'_n c_n t_n.

    Returns (gradient, hess f(mu), its Cholesky factor).
    """
    g, H = gradient_hessian(mu, T, y, prior_mean, prior_precision)
    chol = _chol_neg(H)
    cov = _inverse(chol, T.shape[1])
    s = expit(T @ mu)
    w1 = s * (1.0 - s) * (1.0 - 2.0 * s)          # w'_n
    c = _quad_rows(T, cov)                          # t_n^T Sigma t_n
    return g - 0.5 * T.T @ (w1 * c), H, chol


def delta(T, y, prior_mean, prior_precision, init=None, tol=1e-12, max_iter=200):
    """Delta-method variational inference (sec. 3.2, eq. 17), started at the Laplace mode."""
    p = T.shape[1]
    start = laplace(T, y, prior_mean, prior_precision, init=init)
    mu = start.mean.copy()
    obj = delta_objective(mu, T, y, prior_mean, prior_precision)
    it = 0
    for it in range(1, max_iter + 1):
        g, H, chol = delta_gradient(mu, T, y, prior_mean, prior_precision)
        step = cho_solve(chol, g)                   # (-hess f)^-1 grad D: an ascent direction
        decrement = float(g @ step)
        if decrement <= 2.0 * tol:
            break
        t = 1.0
        while True:
            new = mu + t * step
            try:
                onew = delta_objective(new, T, y, prior_mean, prior_precision)
            except FloatingPointError:
                onew = -np.inf
            if onew >= obj + 1e-4 * t * decrement or t < 1e-12:
                break
            t *= 0.5
        if t < 1e-12:
            break
        mu, obj = new, onew
    _, H = gradient_hessian(mu, T, y, prior_mean, prior_precision)
    cov = _inverse(_chol_neg(H), p)
    return Posterior(mu, cov, "delta", {"iterations": it, "objective": obj,
                                        "laplace_iterations": start.info["iterations"]})


# -------------------------------------------------------------------- Jaakkola and Jordan
def jj_lambda(xi):
    """lambda(xi) = (sigma(xi) - 1/2) / (2 xi) = tanh(xi/2) / (4 xi); 1/8 at xi = 0."""
    xi = np.abs(np.asarray(xi, dtype=float))
    small = xi < 1e-6
    safe = np.where(small, 1.0, xi)
    return np.where(small, 0.125 - xi * xi / 96.0, np.tanh(safe / 2.0) / (4.0 * safe))


def jj_log_sigmoid_bound(x, xi):
    """Jaakkola-Jordan lower bound of log sigma(x): tight at xi = |x|."""
    x = np.asarray(x, dtype=float)
    xi = np.asarray(xi, dtype=float)
    return log_expit(xi) + (x - xi) / 2.0 - jj_lambda(xi) * (x * x - xi * xi)


def jj(T, y, prior_mean, prior_precision, tol=1e-10, max_iter=1000):
    """Jaakkola and Jordan's variational bound, optimised by EM over the xi_n.

    info["bound"] is the lower bound on log p(y | T) (prior included) at the final xi.
    """
    p = T.shape[1]
    prior_chol = _chol_neg(-prior_precision)
    prior_cov = _inverse(prior_chol, p)
    xi = np.sqrt(_quad_rows(T, prior_cov) + (T @ prior_mean) ** 2)
    b = prior_precision @ prior_mean + T.T @ (y - 0.5)
    const = -0.5 * float(prior_mean @ prior_precision @ prior_mean) + 0.5 * _logdet(prior_chol)
    bound, history = -np.inf, []
    it = 0
    for it in range(1, max_iter + 1):
        lam = jj_lambda(xi)
        P = prior_precision + 2.0 * (T.T * lam) @ T
        chol = _chol_neg(-P)
        cov = _inverse(chol, p)
        mean = cho_solve(chol, b)
        new = (const - 0.5 * _logdet(chol) + 0.5 * float(mean @ P @ mean)
               + float(np.sum(log_expit(xi) - xi / 2.0 + lam * xi * xi)))
        history.append(new)
        xi = np.sqrt(_quad_rows(T, cov) + (T @ mean) ** 2)
        if abs(new - bound) <= tol * max(1.0, abs(new)):
            bound = new
            break
        bound = new
    return Posterior(mean, cov, "jj", {"iterations": it, "bound": bound, "xi": xi,
                                       "bound_history": history})


# ------------------------------------------------------------------------------------- BBVI
class LogisticBBVI:
    """Bayesian logistic regression for topicscale.inference.bbvi: mean-field Gaussian factors
    theta_j.

    Terms of log p: the prior (one term per coefficient when Sigma_0 is diagonal, each in its own
    factor's Markov blanket; else one term touching every factor) and one likelihood term per data
    point, touching every coefficient (data=True: subsampled in minibatches).
    """

    def __init__(self, T, y, prior_mean, prior_precision):
        self.T, self.y = T, y
        self.prior_mean, self.prior_precision = prior_mean, prior_precision
        self.n_data = T.shape[0]
        self.diagonal = np.count_nonzero(prior_precision - np.diag(np.diag(prior_precision))) == 0
        self.p = T.shape[1]
        sd = np.sqrt(np.diag(np.linalg.inv(prior_precision)))
        self._families = {"theta": bb.Normal((self.p,), mean=prior_mean, log_sd=np.log(sd))}

    def variables(self):
        """q(theta) = prod_j N(m_j, s_j^2), started at the prior's means and marginal sds."""
        return self._families

    def terms(self, z, batch):
        theta = z["theta"]
        T = self.T if batch is None else self.T[batch]
        y = self.y if batch is None else self.y[batch]
        a = theta @ T.T
        lik = y * a - np.logaddexp(0.0, a)
        d = theta - self.prior_mean
        if self.diagonal:
            prior = bb.Term(-0.5 * d * d * np.diag(self.prior_precision), {"theta": np.arange(self.p)})
        else:
            prior = bb.Term(-0.5 * np.einsum("si,ij,sj->s", d, self.prior_precision, d)[:, None],
                            {"theta": None})
        return [prior, bb.Term(lik, {"theta": None}, data=True)]


BBVI_DEFAULTS = {"n_iter": 3000, "n_samples": 32, "step_size": 1.0, "batch_size": 256, "seed": 0,
                 "average": 0.5}


def bbvi_fit(T, y, prior_mean, prior_precision, init=None, init_adagrad=None, **options):
    """Black-box VI with a mean-field Gaussian q(theta) (topicscale.inference.bbvi); cov is
    diagonal.

    init / init_adagrad: the (m, log s) parameters and AdaGrad sums of an earlier run to continue.
    """
    settings = dict(BBVI_DEFAULTS, **{k: v for k, v in options.items() if v is not None})
    model = LogisticBBVI(T, y, prior_mean, prior_precision)
    start = None if init is None else {"theta": init}
    state = None if init_adagrad is None else {"theta": init_adagrad}
    result = bb.fit(model, init=start, init_adagrad=state, **settings)
    mean = result.mean("theta")
    cov = np.diag(result.variance("theta"))
    return Posterior(mean, cov, "bbvi", {"iterations": result.iterations, "seconds": result.seconds,
                                         "elbo_last": float(np.mean(result.elbo[-100:])),
                                         "params": result.params["theta"],
                                         "adagrad": result.adagrad["theta"], **settings})


def fit_posterior(method, T, y, prior_mean, prior_precision, init=None, bbvi_options=None):
    """q(theta) by one of METHODS."""
    T = np.asarray(T, dtype=float)
    y = np.asarray(y, dtype=float)
    if method == "laplace":
        return laplace(T, y, prior_mean, prior_precision, init=None if init is None else init.mean)
    if method == "delta":
        return delta(T, y, prior_mean, prior_precision, init=None if init is None else init.mean)
    if method == "jj":
        return jj(T, y, prior_mean, prior_precision)
    if method == "bbvi":
        opts = dict(bbvi_options or {})
        if init is not None and "params" in init.info:            # continue the earlier run
            return bbvi_fit(T, y, prior_mean, prior_precision, init=init.info["params"],
                            init_adagrad=init.info["adagrad"], **opts)
        return bbvi_fit(T, y, prior_mean, prior_precision, **opts)
    raise ValueError(f"unknown method {method!r} (choose from {', '.join(METHODS)})")


# ------------------------------------------------------------------------------ predictive
_LAMBDA = math.sqrt(math.pi / 8.0)
_GH_X, _GH_W = np.polynomial.hermite.hermgauss(64)
_GH_LOGW = np.log(_GH_W / math.sqrt(math.pi))
_GL_X, _GL_W = np.polynomial.legendre.leggauss(256)


def _expected_sigmoid(m, s):
    """E[sigma(a)], a ~ N(m, s^2), to about 1e-10 in absolute terms (s > 2 only).

    sigma(a) = Phi(lambda a) + r(a) with lambda^2 = pi/8: the probit part integrates in closed form,
    Phi(lambda m / sqrt(1 + lambda^2 s^2)); the remainder r is smooth, odd and below e^-40 in size
    outside [-40, 40], where it is integrated against the Gaussian by 256-point Gauss-Legendre.
    """
    lo = np.maximum(m - 10.0 * s, -40.0)
    hi = np.maximum(np.minimum(m + 10.0 * s, 40.0), lo)
    half, mid = (hi - lo) / 2.0, (hi + lo) / 2.0
    a = mid[:, None] + half[:, None] * _GL_X
    dens = np.exp(-0.5 * ((a - m[:, None]) / s[:, None]) ** 2) / (s[:, None] * math.sqrt(2.0 * math.pi))
    r = expit(a) - ndtr(_LAMBDA * a)
    out = ndtr(_LAMBDA * m / np.sqrt(1.0 + _LAMBDA ** 2 * s * s)) + (r * dens) @ _GL_W * half
    return np.clip(out, 0.0, 1.0)


def _log_expected_sigmoid(m, s):
    out = np.empty_like(m)
    narrow = s <= 2.0
    if narrow.any():
        # the Gaussian is narrow next to sigma's scale: 64-point Gauss-Hermite, in logs
        a = m[narrow, None] + math.sqrt(2.0) * s[narrow, None] * _GH_X
        out[narrow] = logsumexp(log_expit(a) + _GH_LOGW, axis=1)
    wide = ~narrow
    if wide.any():
        mw, sw = m[wide], s[wide]
        p = _expected_sigmoid(mw, sw)
        res = np.log(np.maximum(p, 1e-300))
        tiny = p < 1e-6
        if tiny.any():
            # relative accuracy in the tail: E[sigma(a)] = e^(m + s^2/2) E[sigma(-b)], b ~ N(m + s^2, s^2)
            mt, st = mw[tiny], sw[tiny]
            res[tiny] = mt + 0.5 * st * st + np.log(np.maximum(_expected_sigmoid(-(mt + st * st), st), 1e-300))
        out[wide] = res
    return out


def log_predictive(m, s):
    """(log p(y=1), log p(y=0)) with p(y=1) = E[sigma(a)], a ~ N(m, s^2), elementwise.

    Accurate to about 1e-10 (tested against adaptive quadrature), also in the tails, in logs.
    """
    m = np.atleast_1d(np.asarray(m, dtype=float))
    s = np.broadcast_to(np.atleast_1d(np.asarray(s, dtype=float)), m.shape).astype(float)
    return _log_expected_sigmoid(m, s), _log_expected_sigmoid(-m, s)


def probit_predictive(m, s):
    """MacKay's approximation sigma(m / sqrt(1 + pi s^2 / 8)) of E[sigma(a)]."""
    return expit(np.asarray(m) / np.sqrt(1.0 + math.pi * np.asarray(s) ** 2 / 8.0))


def activation(posterior_mean, posterior_cov, T):
    """Mean and standard deviation of a = theta^T t under q, for each row t of T."""
    m = T @ posterior_mean
    var = _quad_rows(T, posterior_cov)
    return m, np.sqrt(np.maximum(var, 0.0))


def predict_log_proba(posterior, T, approximation="quadrature"):
    """(log p(y=1|t), log p(y=0|t)) for every row of T, integrating over q(theta).

    approximation: "quadrature" (log_predictive), "probit" (MacKay) or "plugin" (sigma(mu^T t),
    not integrated; for comparison only).
    """
    m, s = activation(posterior.mean, posterior.cov, T)
    if approximation == "quadrature":
        return log_predictive(m, s)
    if approximation == "probit":
        k = 1.0 / np.sqrt(1.0 + math.pi * s * s / 8.0)
        return log_expit(k * m), log_expit(-k * m)
    if approximation == "plugin":
        return log_expit(m), log_expit(-m)
    raise ValueError(f"unknown approximation {approximation!r}")
