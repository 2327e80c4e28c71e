"""Plain-numpy twins of kernels/ctm.py (Wang and Blei 2013, secs. 3.1-3.4 and appendix B), written
from the paper's formulas with explicit matrices: phi (n x K), the Hessian, Sigma."""
import numpy as np
from scipy.special import logsumexp, softmax


def f_value(theta, s, mu0, Lam):
    """f(theta) = s . eta(theta) - 1/2 (theta - mu0)' Lambda (theta - mu0), eta = log softmax (app. B)."""
    d = theta - mu0
    return s @ (theta - logsumexp(theta)) - 0.5 * d @ Lam @ d


def f_gradient(theta, s, mu0, Lam):
    pi = softmax(theta)
    return s - pi * s.sum() - Lam @ (theta - mu0)


def f_hessian(theta, s, mu0, Lam):
    pi = softmax(theta)
    return (np.outer(pi, pi) - np.diag(pi)) * s.sum() - Lam


def eq17(mu, nu, s, mu0, Lam):
    """The delta method's objective (eq. 17) with Sigma = diag(nu)."""
    return f_value(mu, s, mu0, Lam) + 0.5 * np.trace(f_hessian(mu, s, mu0, Lam) @ np.diag(nu)) \
        + 0.5 * np.log(nu).sum()


def _profiled(method, mu, s, mu0, Lam):
    """The function the q(theta) update maximises: f (laplace), eq. 17 at its optimal nu (delta)."""
    if method == "laplace":
        return f_value(mu, s, mu0, Lam)
    nu = 1.0 / np.diag(-f_hessian(mu, s, mu0, Lam))
    return eq17(mu, nu, s, mu0, Lam)


def _ascent(method, mu, s, mu0, Lam):
    g = f_gradient(mu, s, mu0, Lam)
    if method == "delta":
        N, pi = s.sum(), softmax(mu)
        nu = 1.0 / np.diag(-f_hessian(mu, s, mu0, Lam))
        # d/dmu of 1/2 Tr{hess f diag(nu)} with nu fixed
        dpi = np.diag(pi) - np.outer(pi, pi)              # dpi_k / dmu_i (symmetric)
        g = g - 0.5 * N * dpi @ (nu * (1 - 2 * pi))
    return g


def _profiled_hessian(method, mu, s, mu0, Lam):
    """Hessian of f (laplace) or of eq. 17 at its optimal nu (delta): hess f - 1/2 sum_k hess log h_k,
    h_k = N pi_k (1 - pi_k) + Lambda_kk, from grad h_k and hess h_k written out per topic."""
    H = f_hessian(mu, s, mu0, Lam)
    if method == "laplace":
        return H
    N, pi, K = s.sum(), softmax(mu), len(mu)
    h = np.diag(-H)
    A = np.diag(pi) - np.outer(pi, pi)
    for k in range(K):
        e = np.eye(K)[k] - pi
        grad_h = N * (1 - 2 * pi[k]) * pi[k] * e
        hess_h = N * (pi[k] * (1 - 4 * pi[k]) * np.outer(e, e) - (1 - 2 * pi[k]) * pi[k] * A)
        H = H - 0.5 * hess_h / h[k] + 0.5 * np.outer(grad_h, grad_h) / h[k] ** 2
    return H


def update_q_theta(method, s, mu0, Lam, mu, max_newton=50, gtol=1e-10):
    """Newton's method with Armijo backtracking (with -hess f where the delta objective's Hessian
    is not negative definite); near the optimum, at most two full steps past what f resolves."""
    N = s.sum()
    mu = mu.copy()
    polish = 0
    for _ in range(max_newton):
        g = _ascent(method, mu, s, mu0, Lam)
        if np.max(np.abs(g)) <= gtol * (1 + N):
            break
        negH = -_profiled_hessian(method, mu, s, mu0, Lam)
        if np.any(np.linalg.eigvalsh(negH) <= 0):
            negH = -f_hessian(mu, s, mu0, Lam)
        step = np.linalg.solve(negH, g)
        f0, slope, t = _profiled(method, mu, s, mu0, Lam), g @ step, 1.0
        if slope < 1e-10 * (1 + abs(f0)):
            polish += 1
            if polish > 2:
                break
        else:
            while t > 1e-10 and _profiled(method, mu + t * step, s, mu0, Lam) < f0 + 1e-4 * t * slope:
                t *= 0.5
            if t <= 1e-10:
                break
        mu = mu + t * step
    return mu


def sigma_of(method, mu, s, mu0, Lam):
    negH = -f_hessian(mu, s, mu0, Lam)
    return np.linalg.inv(negH) if method == "laplace" else np.diag(1.0 / np.diag(negH))


def _bound(method, phi, counts, B, mu, s, mu0, Lam, logdet0):
    with np.errstate(divide="ignore", invalid="ignore"):
        entropy_lik = np.sum(counts[:, None] * np.where(phi > 0, phi * (np.log(B) - np.log(phi)), 0.0))
    Sigma = sigma_of(method, mu, s, mu0, Lam)
    H = f_hessian(mu, s, mu0, Lam)
    return Sigma, (entropy_lik + f_value(mu, s, mu0, Lam) + 0.5 * np.trace(H @ Sigma)
                   + 0.5 * np.linalg.slogdet(Sigma)[1] - 0.5 * logdet0 + 0.5 * len(mu))


def fit_document(method, ids, counts, beta, mu0, Lam, max_iter=100, tol=1e-3, gtol=1e-10):
    """Figure 1 for one document, from mu = mu0, with the kernel's inexact inner solves (gradient
    below 1% of N at the first sweep, then below a tenth of the last change of s; the last one
    finished to gtol). Returns mu, Sigma, phi (n x K), sweeps, bound, with the bound of
    kernels/ctm.py (eq. 21 plus the likelihood and constant terms)."""
    B = beta[ids]
    N = counts.sum()
    logdet0 = -np.linalg.slogdet(Lam)[1]
    mu = mu0.copy()
    previous, sweeps, s_prev = -np.inf, 0, None
    while sweeps < max_iter:
        sweeps += 1
        pi = softmax(mu)
        phi = pi * B
        phi /= phi.sum(axis=1, keepdims=True)
        s = counts @ phi
        inner = 0.01 * (1 + N) if s_prev is None else 0.1 * np.max(np.abs(s - s_prev))
        s_prev = s
        mu = update_q_theta(method, s, mu0, Lam, mu, gtol=max(gtol, inner / (1 + N)))
        Sigma, bound = _bound(method, phi, counts, B, mu, s, mu0, Lam, logdet0)
        if abs(bound - previous) <= tol * N:
            break
        previous = bound
    mu = update_q_theta(method, s, mu0, Lam, mu, gtol=gtol)
    Sigma, bound = _bound(method, phi, counts, B, mu, s, mu0, Lam, logdet0)
    pi = softmax(mu)
    phi = pi * B
    phi /= phi.sum(axis=1, keepdims=True)
    return mu, Sigma, phi, sweeps, bound


def completion_theta(mu, Sigma, eps):
    """Monte Carlo E_q[softmax(theta)] with draws mu + A eps_s, A A' = Sigma (A = L'^-1 with
    L L' = Sigma^-1, the factor the kernel uses)."""
    L = np.linalg.cholesky(np.linalg.inv(Sigma))
    draws = mu + np.linalg.solve(L.T, eps.T).T
    return softmax(draws, axis=1).mean(axis=0)
