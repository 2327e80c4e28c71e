"""Hierarchical Bayesian logistic regression by variational EM (Wang and Blei 2013, sec. 4.2 and
appendix C).

    Sigma_0^-1 ~ Wishart(nu, Phi_0)                        (eq. 22; Phi_0 = phi0 I)
    mu_0       ~ N(0, Phi_1)                               (eq. 23; Phi_1 = phi1 I)
    theta_m    ~ N(mu_0, Sigma_0)          for each group m = 1..M
    y_mn       ~ Bernoulli(sigma(theta_m^T t_mn))

E-step: q(theta_m) = N(mu_m, Sigma_m) for every group by Laplace, delta, JJ or BBVI with the
current prior N(mu_0, Sigma_0) (logistic.fit_posterior). M-step: the MAP updates of appendix C,
with the expected sufficient statistics under q, so each group's posterior covariance enters:

    mu_0    = (Sigma_0 Phi_1^-1 / M + I)^-1 (1/M) sum_m mu_m
    Sigma_0 = (Phi_0^-1 + sum_m [(mu_m - mu_0)(mu_m - mu_0)^T + Sigma_m]) / (M + nu - p - 1)

(the paper's Sigma_0 update writes only the outer products; E_q[(theta_m - mu_0)(theta_m - mu_0)^T]
adds Sigma_m). nu = p + nu_extra. The defaults phi0 = 0.1, phi1 = 1, nu_extra = 10 make the
hyperprior worth about ten pseudo-groups with Sigma_0 ~ I and keep mu_0 on the scale of the
non-hierarchical prior; the paper's School-data setting is nu_extra = 100, phi0 = phi1 = 0.01.
"""
from dataclasses import dataclass, field

import numpy as np

from .logistic import Posterior, fit_posterior

HYPER_DEFAULTS = {"phi0": 0.1, "phi1": 1.0, "nu_extra": 10.0}


@dataclass
class HierarchicalFit:
    posteriors: list          # one Posterior per group, in group-index order
    mu0: np.ndarray
    sigma0: np.ndarray
    info: dict = field(default_factory=dict)

    def population(self):
        """The prior of a new group's coefficients, N(mu_0, Sigma_0), as a Posterior."""
        return Posterior(self.mu0, self.sigma0, "population")


def m_step(posteriors, sigma0, phi0, phi1, nu_extra):
    """The MAP updates of (mu_0, Sigma_0) given the groups' q(theta_m) (appendix C)."""
    M = len(posteriors)
    p = sigma0.shape[0]
    means = np.array([q.mean for q in posteriors])
    mu0 = np.linalg.solve(sigma0 / (M * phi1) + np.eye(p), means.mean(axis=0))
    dev = means - mu0
    scatter = dev.T @ dev + sum(q.cov for q in posteriors)
    nu = p + nu_extra
    sigma0 = (np.eye(p) / phi0 + scatter) / (M + nu - p - 1.0)
    return mu0, 0.5 * (sigma0 + sigma0.T)


def fit_hierarchical(T, y, group_index, n_groups, method="laplace", prior_variance=1.0,
                     phi0=None, phi1=None, nu_extra=None, tol=1e-6, max_iter=None, bbvi_options=None):
    """Variational EM; group_index[n] in 0..n_groups-1. Returns a HierarchicalFit.

    max_iter: EM iterations cap (default 100; 20 for BBVI, whose noisy E-steps do not meet tol).
    With BBVI, the E-steps after the first continue each group's previous run for a fifth of its
    n_iter steps (at least 100).
    """
    if max_iter is None:
        max_iter = 20 if method == "bbvi" else 100
    phi0 = HYPER_DEFAULTS["phi0"] if phi0 is None else float(phi0)
    phi1 = HYPER_DEFAULTS["phi1"] if phi1 is None else float(phi1)
    nu_extra = HYPER_DEFAULTS["nu_extra"] if nu_extra is None else float(nu_extra)
    if n_groups + nu_extra - 1.0 <= 0:
        raise ValueError("nu_extra must exceed 1 - (number of groups)")
    T = np.asarray(T, dtype=float)
    y = np.asarray(y, dtype=float)
    p = T.shape[1]
    rows = [np.flatnonzero(group_index == m) for m in range(n_groups)]
    mu0 = np.zeros(p)
    sigma0 = prior_variance * np.eye(p)
    posteriors = [None] * n_groups
    history = []
    it = 0
    for it in range(1, max_iter + 1):
        precision = np.linalg.inv(sigma0)
        precision = 0.5 * (precision + precision.T)
        options = _bbvi_options(bbvi_options, it) if method == "bbvi" else None
        posteriors = [fit_posterior(method, T[r], y[r], mu0, precision, init=posteriors[m],
                                    bbvi_options=options and dict(options, seed=options["seed"] + [m]))
                      for m, r in enumerate(rows)]
        new_mu0, new_sigma0 = m_step(posteriors, sigma0, phi0, phi1, nu_extra)
        change = max(float(np.max(np.abs(new_mu0 - mu0))), float(np.max(np.abs(new_sigma0 - sigma0))))
        mu0, sigma0 = new_mu0, new_sigma0
        history.append(change)
        if change < tol:
            break
    return HierarchicalFit(posteriors, mu0, sigma0,
                           {"iterations": it, "max_iter": max_iter, "change": history, "phi0": phi0, "phi1": phi1,
                            "nu_extra": nu_extra, "converged": bool(history and history[-1] < tol)})


def _bbvi_options(options, iteration):
    """BBVI options for EM iteration `iteration`: a seed of its own (derived from the user's; the
    caller appends the group), and after the first iteration a fifth of the steps, since each
    run continues the group's previous one."""
    from .logistic import BBVI_DEFAULTS
    options = dict(options or {})
    base = int(options.get("seed") or 0)
    options["seed"] = [base, iteration]
    if iteration > 1:
        n_iter = int(options.get("n_iter") or BBVI_DEFAULTS["n_iter"])
        options["n_iter"] = max(100, n_iter // 5)
    return options
