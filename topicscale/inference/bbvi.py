"""Black-box variational inference (Ranganath, Gerrish and Blei 2014, "Black box variational
inference", AISTATS; Blei's talk "Scaling and generalizing approximate inference", the BBVI slides):
the engine of the CTM's local step "bbvi" (local_steps/bbvi.py) and of topicscale/classify's
Bayesian logistic regression.

The gradient of the ELBO L(lambda) = E_q[log p(x, z) - log q(z | lambda)] is the expectation

    grad_lambda L = E_q[grad_lambda log q(z | lambda) (log p(x, z) - log q(z | lambda))],

estimated from S samples z_s ~ q. Only three things are needed: sampling q, its score
grad log q, and log p. Plain, that estimate is too noisy to be useful; the paper's remedies, all
here:

* **Rao-Blackwellization.** q is a product of factors q_i(z_i | lambda_i). The gradient for
  lambda_i integrates out everything outside z_i's Markov blanket, which leaves

      grad_{lambda_i} L = E_q[grad log q_i(z_i) (log p_i(x, z_(i)) - log q_i(z_i))],

  with log p_i the sum of the terms of log p that contain z_i. So a model supplies its log
  density *term by term*, each `Term` saying which factors it touches, never as one number;
  the engine sums, for every factor, the terms of its blanket.
* **Control variates.** h = grad log q_i has mean zero under q, so f - a h has the same mean as
  f = h (log p_i - log q_i); per factor i the scale that minimises the variance is
  a*_i = sum_d Cov(f_id, h_id) / sum_d Var(h_id), summed over the components d of lambda_i,
  estimated from the same S samples, as in the paper. That plug-in biases the estimate towards
  zero by O(1/S) (about 20% at S = 16 in tests/test_bbvi.py; harmless where f is proportional
  to h, as at the optimum of a conjugate model); `control_variates="loo"` corrects each sample
  with the a* of the other S - 1, which is unbiased at about twice the variance.
* **AdaGrad.** rho_t = eta G_t^(-1/2) per coordinate, G_t the running sum of squared gradients.
* **Minibatches.** Terms marked `data=True` belong to data points; each iteration looks at a
  minibatch B of them and multiplies their contribution to the global factors by N / |B|. Local
  variables (one factor group per data point, e.g. a document's topic proportions) are fitted
  for the minibatch first, by the same noisy gradients with their own AdaGrad, with the global
  q fixed; then the global factors take one step (the paper's stochastic inference in
  hierarchical models, and the "stochastic variational inference, for handling massive data"
  of the talk).

Random numbers come from one `numpy.random.Generator` seeded by `seed`: same seed, same result.
Optionally the returned parameters are the average of the iterates over the last `average`
fraction of the run (Polyak-Ruppert averaging; not in the paper): AdaGrad's steps shrink like
t^(-1/2), and averaging removes most of the remaining jitter.

A variational *family* is a block of independent factors of one type (`Normal`: one factor per
element, `MVNormal`: one full-covariance Gaussian, `Beta`: one factor per element); its
parameters are an array of shape (F factors, P parameters per factor).
"""
from dataclasses import dataclass, field
import math
import time

import numpy as np
from scipy.special import betaln, digamma

LOG_2PI = math.log(2.0 * math.pi)


# ------------------------------------------------------------------------------- families
class Normal:
    """Independent scalar Gaussians N(m_j, s_j^2), one factor per element of `shape`.

    Parameters per factor: (m, log s). Samples have shape (S, *shape).
    """
    n_params = 2

    def __init__(self, shape, mean=0.0, log_sd=0.0):
        self.shape = tuple(np.atleast_1d(shape).tolist()) if not isinstance(shape, tuple) else shape
        self.n_factors = int(np.prod(self.shape))
        self._mean = mean
        self._log_sd = log_sd

    def init(self):
        F = self.n_factors
        return np.stack([np.broadcast_to(np.asarray(self._mean, float).ravel(), (F,)),
                         np.broadcast_to(np.asarray(self._log_sd, float).ravel(), (F,))], axis=1).copy()

    def sample(self, params, rng, n):
        eps = rng.standard_normal((n, self.n_factors))
        return (params[:, 0] + np.exp(params[:, 1]) * eps).reshape((n,) + self.shape)

    def log_q(self, params, z):
        z = z.reshape(z.shape[0], -1)
        u = (z - params[:, 0]) * np.exp(-params[:, 1])
        return -0.5 * u * u - params[:, 1] - 0.5 * LOG_2PI

    def score(self, params, z):
        z = z.reshape(z.shape[0], -1)
        inv_sd = np.exp(-params[:, 1])
        u = (z - params[:, 0]) * inv_sd
        return np.stack([u * inv_sd, u * u - 1.0], axis=2)

    def mean(self, params):
        return params[:, 0].reshape(self.shape)

    def variance(self, params):
        return np.exp(2.0 * params[:, 1]).reshape(self.shape)


class MVNormal:
    """One full-covariance Gaussian N(m, L L^T) over a d-vector (a single factor).

    Parameters: m (d), then the lower triangle of the Cholesky factor L row by row, its diagonal
    stored as log L_ii. The score: grad_m = L^-T eps, grad_L = tril(L^-T eps eps^T) - diag(1/L_ii)
    (with z = m + L eps), times L_ii on the log-diagonal.
    """
    n_factors = 1

    def __init__(self, dim, mean=0.0, log_sd=0.0):
        self.dim = int(dim)
        self.shape = (self.dim,)
        self.n_params = self.dim + self.dim * (self.dim + 1) // 2
        self._rows, self._cols = np.tril_indices(self.dim)
        self._diag = self._rows == self._cols
        self._mean = mean
        self._log_sd = log_sd

    def init(self):
        p = np.zeros(self.n_params)
        p[:self.dim] = self._mean
        p[self.dim:][self._diag] = self._log_sd
        return p[None, :]

    def cholesky(self, params):
        flat = params[0, self.dim:].copy()
        flat[self._diag] = np.exp(flat[self._diag])
        L = np.zeros((self.dim, self.dim))
        L[self._rows, self._cols] = flat
        return L

    def sample(self, params, rng, n):
        eps = rng.standard_normal((n, self.dim))
        return params[0, :self.dim] + eps @ self.cholesky(params).T

    def _eps(self, params, z):
        L = self.cholesky(params)
        L_inv = np.linalg.inv(L)        # (scipy's triangular solve stalls in threaded OpenBLAS)
        return L, L_inv, (z - params[0, :self.dim]) @ L_inv.T

    def log_q(self, params, z):
        L, _, eps = self._eps(params, z)
        return (-0.5 * np.sum(eps * eps, axis=1) - np.sum(np.log(np.diag(L)))
                - 0.5 * self.dim * LOG_2PI)[:, None]

    def score(self, params, z):
        L, L_inv, eps = self._eps(params, z)
        v = eps @ L_inv                                                 # L^-T eps, (S, d)
        G = v[:, self._rows] * eps[:, self._cols]                       # tril of L^-T eps eps^T
        diag = np.diag(L)[self._rows[self._diag]]
        G[:, self._diag] = G[:, self._diag] * diag - 1.0
        return np.concatenate([v, G], axis=1)[:, None, :]

    def mean(self, params):
        return params[0, :self.dim].copy()

    def covariance(self, params):
        L = self.cholesky(params)
        return L @ L.T

    def variance(self, params):
        return np.diag(self.covariance(params))


class Beta:
    """Independent Beta(a_j, b_j) factors, one per element; parameters per factor (log a, log b)."""
    n_params = 2
    _tiny = 1e-12

    def __init__(self, shape, a=1.0, b=1.0):
        self.shape = shape if isinstance(shape, tuple) else (int(shape),)
        self.n_factors = int(np.prod(self.shape))
        self._a, self._b = a, b

    def init(self):
        F = self.n_factors
        return np.log(np.stack([np.broadcast_to(np.asarray(self._a, float).ravel(), (F,)),
                                np.broadcast_to(np.asarray(self._b, float).ravel(), (F,))], axis=1))

    def sample(self, params, rng, n):
        a, b = np.exp(params[:, 0]), np.exp(params[:, 1])
        z = rng.beta(a, b, size=(n, self.n_factors))
        return np.clip(z, self._tiny, 1.0 - self._tiny).reshape((n,) + self.shape)

    def log_q(self, params, z):
        z = z.reshape(z.shape[0], -1)
        a, b = np.exp(params[:, 0]), np.exp(params[:, 1])
        return (a - 1) * np.log(z) + (b - 1) * np.log1p(-z) - betaln(a, b)

    def score(self, params, z):
        z = z.reshape(z.shape[0], -1)
        a, b = np.exp(params[:, 0]), np.exp(params[:, 1])
        dab = digamma(a + b)
        return np.stack([a * (np.log(z) - digamma(a) + dab), b * (np.log1p(-z) - digamma(b) + dab)], axis=2)

    def mean(self, params):
        a, b = np.exp(params[:, 0]), np.exp(params[:, 1])
        return (a / (a + b)).reshape(self.shape)

    def variance(self, params):
        a, b = np.exp(params[:, 0]), np.exp(params[:, 1])
        return (a * b / ((a + b) ** 2 * (a + b + 1))).reshape(self.shape)


# ---------------------------------------------------------------------------------- terms
@dataclass
class Term:
    """E elementary terms of log p(x, z), evaluated at S samples: `value` has shape (S, E).

    `touches` maps each variable the terms contain to None (every element contains every factor
    of that variable), to an int array of length E (element e contains factor touches[v][e]
    only), or to an int array E x r (element e contains the factors in row e; -1 pads). `data=True` marks terms of data points: on a minibatch their contribution to global
    factors is scaled by N / |B|.
    """
    value: np.ndarray
    touches: dict
    data: bool = False


def blankets(families, terms, n_samples, data_scale=1.0, local=()):
    """For every variable, (S, F): the sum of the terms in each factor's Markov blanket.

    Data terms count `data_scale` times for variables not in `local`, once for local ones.
    """
    out = {name: np.zeros((n_samples, fam.n_factors)) for name, fam in families.items()}
    for term in terms:
        value = np.asarray(term.value, dtype=float)
        if value.ndim == 1:
            value = value[:, None]
        for name, index in term.touches.items():
            if name not in out:
                continue
            w = data_scale if (term.data and name not in local) else 1.0
            F = out[name].shape[1]
            if index is None:
                out[name] += w * value.sum(axis=1, keepdims=True)
            else:
                index = np.asarray(index)
                vals = value
                if index.ndim == 2:                     # element e touches factors index[e, :] (-1: none)
                    keep = index >= 0
                    vals = np.broadcast_to(value[:, :, None], value.shape + index.shape[1:])[:, keep]
                    index = index[keep]
                flat = (np.arange(n_samples)[:, None] * F + index[None, :]).ravel()
                out[name] += w * np.bincount(flat, weights=vals.ravel(),
                                             minlength=n_samples * F).reshape(n_samples, F)
    return out


def total_log_joint(terms, n_samples, data_scale=1.0):
    """(S,): log p(x, z) at each sample (data terms scaled by N/|B|): what the plain estimator uses."""
    total = np.zeros(n_samples)
    for term in terms:
        value = np.asarray(term.value, dtype=float).reshape(n_samples, -1)
        total += (data_scale if term.data else 1.0) * value.sum(axis=1)
    return total


def score_gradient(score, weight, control_variates=True):
    """The Monte Carlo gradient for one family: mean_s of f - a* h, with f = h * weight.

    score (S, F, P) = h = grad log q_i(z_s); weight (S, F) = log p_i - log q_i (Rao-Blackwellized)
    or log p - log q for every factor (plain). a*_i = sum_d Cov(f_id, h_id) / sum_d Var(h_id).

    control_variates: False (none); True or "same" (the paper, the default: a* from all S samples,
    which biases the estimate towards zero by O(1/S), about 20% at S = 16 on the Beta-Bernoulli
    test, but gives the lowest variance); "loo" (sample s is corrected with the a* of the other
    S - 1 samples, independent of h_s, so the estimate is unbiased, at about twice the variance
    of "same" in the same test; needs S >= 3).
    Returns (F, P).
    """
    f = score * weight[:, :, None]
    S = score.shape[0]
    if not control_variates or S < 2:
        return f.mean(axis=0)
    if control_variates in (True, "same") or S < 3:
        fc = f - f.mean(axis=0)
        hc = score - score.mean(axis=0)
        cov = np.einsum("sfp,sfp->f", fc, hc)
        var = np.einsum("sfp,sfp->f", hc, hc)
        a = np.divide(cov, var, out=np.zeros_like(cov), where=var > 0)
        return (f - a[None, :, None] * score).mean(axis=0)
    if control_variates != "loo":
        raise ValueError(f"control_variates must be False, 'same' or 'loo', not {control_variates!r}")
    # leave-one-out sums: everything but sample s
    sf, sh = f.sum(axis=0) - f, score.sum(axis=0) - score
    sfh = np.sum(f * score, axis=0) - f * score
    shh = np.sum(score * score, axis=0) - score * score
    cov = (sfh - sf * sh / (S - 1)).sum(axis=2)              # (S, F), up to the common 1/(S-2)
    var = (shh - sh * sh / (S - 1)).sum(axis=2)
    a = np.divide(cov, var, out=np.zeros_like(cov), where=var > 0)
    return (f - a[:, :, None] * score).mean(axis=0)


# --------------------------------------------------------------------------------- engine
@dataclass
class BBVIResult:
    params: dict                 # name -> (F, P) parameters of every global family
    families: dict               # name -> family
    elbo: np.ndarray             # noisy ELBO estimate at each iteration (data terms scaled)
    iterations: int
    seconds: float
    local_params: dict = field(default_factory=dict)   # the last minibatch's local parameters
    adagrad: dict = None         # AdaGrad's sums of squared gradients (to continue a run: init_adagrad)

    def mean(self, name):
        return self.families[name].mean(self.params[name])

    def variance(self, name):
        return self.families[name].variance(self.params[name])


class AdaGrad:
    """rho_t = eta * G_t^(-1/2) per coordinate, G_t = sum of squared gradients so far."""

    def __init__(self, step_size, eps=1e-8):
        self.eta = float(step_size)
        self.eps = eps
        self.G = None

    def step(self, params, grads):
        if self.G is None:
            self.G = {k: np.zeros_like(v) for k, v in grads.items()}
        for k, g in grads.items():
            self.G[k] += g * g
            params[k] = params[k] + self.eta * g / (np.sqrt(self.G[k]) + self.eps)


def _sample(families, params, rng, n):
    z, log_q = {}, {}
    for name, fam in families.items():
        z[name] = fam.sample(params[name], rng, n)
        log_q[name] = fam.log_q(params[name], z[name])
    return z, log_q


def estimate_gradient(model, params, rng, n_samples, batch=None, local_params=None,
                      rao_blackwell=True, control_variates=True, which="global"):
    """One noisy gradient of the ELBO for the global (`which="global"`) or local families.

    Returns (grads, elbo_estimate).
    """
    families = model.variables()
    locals_ = model.local_variables(batch) if hasattr(model, "local_variables") else {}
    n_data = getattr(model, "n_data", None)
    scale = 1.0 if (batch is None or not n_data) else n_data / len(batch)
    z, log_q = _sample(families, params, rng, n_samples)
    if locals_:
        zl, lql = _sample(locals_, local_params, rng, n_samples)
        z.update(zl)
        log_q.update(lql)
    terms = model.terms(z, batch)
    targets = families if which == "global" else locals_
    target_params = params if which == "global" else local_params
    log_p = total_log_joint(terms, n_samples, scale if which == "global" else 1.0)
    log_q_total = sum(lq.sum(axis=1) * (scale if (name in locals_ and which == "global") else 1.0)
                      for name, lq in log_q.items())
    if rao_blackwell:
        blanket = blankets(targets, terms, n_samples, scale if which == "global" else 1.0, local=locals_)
    grads = {}
    for name, fam in targets.items():
        h = fam.score(target_params[name], z[name])
        weight = (blanket[name] - log_q[name]) if rao_blackwell else \
            np.broadcast_to((log_p - log_q_total)[:, None], log_q[name].shape)
        grads[name] = score_gradient(h, weight, control_variates)
    return grads, float(np.mean(log_p - log_q_total))


def fit(model, n_iter=2000, n_samples=32, step_size=0.5, batch_size=None, seed=0, init=None,
        local_iters=20, local_step_size=0.5, rao_blackwell=True, control_variates=True,
        average=0.0, local_memory=True, init_adagrad=None, callback=None):
    """Maximise the ELBO of `model` by BBVI; returns a BBVIResult.

    `model` provides `variables()` (name -> family of the global factors), `terms(z, batch)`
    (list of Term; z maps names to samples (S, ...), batch is None or the minibatch's data-point
    indices), optionally `n_data` (number of data points, for minibatches) and
    `local_variables(batch)` (name -> family of the minibatch's local factors).
    batch_size: data points per minibatch (None or 0: all of them, every iteration).
    Local factors are ordered by data point within the minibatch (F = |B| x factors per point);
    with local_memory, a data point's local fit starts where its last visit ended.
    init / init_adagrad: continue an earlier run (its parameters and AdaGrad sums), so a warm start
    keeps the small steps it had reached instead of restarting with steps of size eta.
    """
    rng = np.random.default_rng(seed)
    families = model.variables()
    params = {name: fam.init() for name, fam in families.items()}
    if init:
        params.update({k: np.array(v, dtype=float) for k, v in init.items()})
    n_data = getattr(model, "n_data", None)
    has_locals = hasattr(model, "local_variables")
    opt = AdaGrad(step_size)
    if init_adagrad:
        opt.G = {k: np.array(v, dtype=float) for k, v in init_adagrad.items()}
    start = time.perf_counter()
    elbo = np.empty(n_iter)
    averaged, n_avg = None, 0
    first_avg = n_iter - int(round(average * n_iter))
    local_params = {}
    memory = {}
    for t in range(n_iter):
        batch = None
        if batch_size and n_data and batch_size < n_data:
            batch = np.sort(rng.choice(n_data, size=batch_size, replace=False))
        elif has_locals and n_data:
            batch = np.arange(n_data)
        if has_locals:
            start_local = _recall(memory, model.local_variables(batch), batch, n_data) if local_memory else None
            local_params = fit_local(model, params, batch, rng, n_samples, local_iters, local_step_size,
                                     rao_blackwell, control_variates, init=start_local)
            if local_memory:
                _remember(memory, local_params, batch)
        grads, elbo[t] = estimate_gradient(model, params, rng, n_samples, batch, local_params,
                                           rao_blackwell, control_variates)
        opt.step(params, grads)
        if t >= first_avg:
            n_avg += 1
            averaged = {k: v.copy() for k, v in params.items()} if averaged is None else \
                {k: averaged[k] + (params[k] - averaged[k]) / n_avg for k in params}
        if callback is not None:
            callback(t, params, elbo[t])
    final = averaged if averaged is not None else params
    return BBVIResult(final, families, elbo, n_iter, time.perf_counter() - start, local_params,
                      {k: v.copy() for k, v in opt.G.items()} if opt.G else None)


def _recall(memory, families, batch, n_data):
    """Initial local parameters: each data point's last fit, or the family's init if never seen."""
    out = {}
    for name, fam in families.items():
        init = fam.init()
        per_point = init.reshape(len(batch), -1, init.shape[1])
        if name not in memory:
            memory[name] = (np.zeros((n_data,) + per_point.shape[1:]), np.zeros(n_data, dtype=bool))
        stored, seen = memory[name]
        per_point = np.where(seen[batch][:, None, None], stored[batch], per_point)
        out[name] = per_point.reshape(init.shape)
    return out


def _remember(memory, local_params, batch):
    for name, params in local_params.items():
        stored, seen = memory[name]
        stored[batch] = params.reshape((len(batch),) + stored.shape[1:])
        seen[batch] = True


def fit_local(model, params, batch, rng, n_samples, n_iter, step_size, rao_blackwell=True,
              control_variates=True, init=None, average=0.0):
    """Fit the local factors of one minibatch with the global q fixed (their own AdaGrad).

    average: return the mean of the iterates over this last fraction of the steps.
    """
    locals_ = model.local_variables(batch)
    local_params = init if init is not None else {name: fam.init() for name, fam in locals_.items()}
    opt = AdaGrad(step_size)
    first_avg = n_iter - int(round(average * n_iter))
    averaged, n_avg = None, 0
    for t in range(n_iter):
        grads, _ = estimate_gradient(model, params, rng, n_samples, batch, local_params,
                                     rao_blackwell, control_variates, which="local")
        opt.step(local_params, grads)
        if t >= first_avg:
            n_avg += 1
            averaged = {k: v.copy() for k, v in local_params.items()} if averaged is None else \
                {k: averaged[k] + (local_params[k] - averaged[k]) / n_avg for k in local_params}
    return averaged if averaged is not None else local_params


def gradient_draws(model, params, n_draws, n_samples, seed=0, rao_blackwell=True, control_variates=True,
                   batch=None, local_params=None):
    """n_draws independent gradient estimates at fixed `params` (for measuring their variance).

    Returns {name: array (n_draws, F, P)}.
    """
    rng = np.random.default_rng(seed)
    draws = [estimate_gradient(model, params, rng, n_samples, batch, local_params, rao_blackwell,
                               control_variates)[0] for _ in range(n_draws)]
    return {k: np.stack([d[k] for d in draws]) for k in draws[0]}
