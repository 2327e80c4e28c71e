"""Learned Dirichlet priors of LDA (`--alpha auto`, `--eta auto`; Wallach, Mimno and McCallum
2009, "Rethinking LDA: why priors matter").

Both maximise the prior terms of the variational bound by a Newton step (Minka 2000,
"Estimating a Dirichlet distribution", sec. 1), taken with the global step's own step size rho_t
as Hoffman, Blei and Bach (2010, sec. 2.2) do for online LDA's alpha, since each minibatch gives a
noisy estimate of the expectations:

    alpha (asymmetric, K): maximise  sum_d  log Gamma(sum_k alpha_k) - sum_k log Gamma(alpha_k)
                                             + sum_k (alpha_k - 1) E[log theta_dk]
        over the minibatch's documents, E[log theta_dk] = psi(gamma_dk) - psi(sum_j gamma_dj),
        gamma from a mean-field document step (inference/chunks.with_alpha_gamma).
        The Hessian is diag(-psi'(alpha)) + psi'(sum alpha) 1 1', inverted in O(K).
    eta (symmetric over V words): maximise  sum_k  log Gamma(V eta) - V log Gamma(eta)
                                                    + (eta - 1) sum_w E[log beta_kw]
        with E[log beta_kw] = psi(lambda_kw) - psi(sum_v lambda_kv); a scalar Newton step.

A step that would make a prior non-positive is halved until it does not. E[log beta] needs a
pass over all V x K entries, so eta moves every ETA_EVERY minibatches (tomotopy's default
optim_interval), from the first on (a run of fewer minibatches learns it too); alpha, which needs
only the minibatch's gamma, every minibatch.
"""
import numpy as np
from scipy.special import polygamma, psi

from ..kernels.special import sum_digamma

ETA_EVERY = 10
HALVINGS = 30


def dirichlet_newton_step(alpha, mean_log_p):
    """The Newton step (increment) of a Dirichlet's parameters given the mean of log p over the
    observations, p ~ Dir(alpha): -H^-1 g with g = psi(sum a) - psi(a) + mean_log_p and
    H = diag(q) + c 1 1', q = -psi'(a), c = psi'(sum a) (Minka 2000, eqs. 15-18)."""
    g = psi(alpha.sum()) - psi(alpha) + mean_log_p
    q = -polygamma(1, alpha)
    c = polygamma(1, alpha.sum())
    b = np.sum(g / q) / (1.0 / c + np.sum(1.0 / q))
    return -(g - b) / q


def symmetric_newton_step(eta, n_words, n_topics, sum_log_beta):
    """The Newton step of a symmetric Dirichlet's eta over `n_words` words, given the sum over
    n_topics topics and all words of E[log beta_kw]."""
    g = n_topics * n_words * (psi(n_words * eta) - psi(eta)) + sum_log_beta
    h = n_topics * n_words * (n_words * polygamma(1, n_words * eta) - polygamma(1, eta))
    return -g / h


def damped(value, step, rho):
    """value + rho * step, rho halved until every entry stays positive (value if none does)."""
    for _ in range(HALVINGS):
        new = value + rho * step
        if np.all(new > 0):
            return new
        rho *= 0.5
    return value


def mean_log_theta(gamma):
    """The documents' mean of E[log theta_dk] under Dir(gamma_d), K."""
    return np.mean(psi(gamma) - psi(gamma.sum(axis=1))[:, None], axis=0)


def sum_log_beta(model):
    """sum_k sum_w E[log beta_kw] under Dir(lambda_k) (one pass over V x K, in parallel)."""
    lam = np.ascontiguousarray(model.lam)
    return float(sum_digamma(lam) - lam.shape[0] * np.sum(psi(lam.sum(axis=0))))


def warm_up_priors(model):
    """Load the kernel of the eta step (sum_log_beta) when the model learns eta."""
    if learns(model)[1]:
        sum_digamma(np.ones((1, 1)))


def learns(model):
    """(learns alpha, learns eta) as the model's settings say."""
    s = model.settings
    return bool(s.get("alpha_auto")), bool(s.get("eta_auto"))


def update_alpha(model, mean_log, rho):
    """alpha <- alpha + rho * (Newton step given the documents' mean E[log theta], K)."""
    model.alpha = damped(model.alpha, dirichlet_newton_step(model.alpha, mean_log), rho)


def update_eta(model, rho):
    """eta <- eta + rho * (Newton step given lambda)."""
    step = symmetric_newton_step(model.eta, model.n_words, model.n_topics, sum_log_beta(model))
    model.eta = float(damped(np.array([model.eta]), np.array([step]), rho)[0])


def update_priors(model, result, rho):
    """After a global step with step size rho on a minibatch whose local step gave `result` (its
    documents' variational Dirichlets result.gamma, D x K): move the priors the model learns
    (eta at steps 1, 1 + ETA_EVERY, ...)."""
    learn_alpha, learn_eta = learns(model)
    if learn_alpha and result.gamma.shape[0]:
        update_alpha(model, mean_log_theta(result.gamma), rho)
    if learn_eta and (model.step - 1) % ETA_EVERY == 0:
        update_eta(model, rho)
