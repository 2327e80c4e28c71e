"""Document step of the correlated topic model: Laplace and delta-method variational inference
(Wang and Blei 2013, "Variational inference in nonconjugate models", secs. 3.1-3.4, 4.1, app. B).

Symbols (paper -> code). One document has distinct words w_n with counts c_n, N = sum_n c_n;
the topics beta (word-major, V' x K: beta[w, k] = beta_kw) and the logistic-normal prior
N(mu_0, Sigma_0) are fixed; Lambda = Sigma_0^-1 ("lam0" below, K x K).
  theta                   log topic proportions (the nonconjugate variable), pi = softmax(theta)
  q(theta) = N(mu, Sigma) Laplace: Sigma full; delta: Sigma = diag(nu)
  q(z_n) = phi_n          phi_nk ~ pi_k(mu) beta_{w_n k}                                 (eq. 18)
      (for the CTM, eta(theta) = log pi(theta) and the second-order term of eq. 19 is the same
      for every k, so it cancels when phi_n is normalised: q(z) needs only mu)
  s = E_q(z)[t(z)]        s_k = sum_n c_n phi_nk, with sum_k s_k = N
  f(theta)                s . theta - N log sum_k exp(theta_k) - 1/2 (theta-mu_0)' Lambda (theta-mu_0)
                          (eq. 12 / app. B, without constants)
  grad f = s - N pi - Lambda (theta - mu_0),  -hess f = N (diag(pi) - pi pi') + Lambda   (app. B)

q(theta) updates (step 4 of figure 1):
  laplace  mu = argmax f (eq. 14) by Newton's method with a backtracking (Armijo) line search;
           Sigma = (-hess f(mu))^-1, kept as the Cholesky factor L of -hess f (L L' = Sigma^-1).
  delta    maximise eq. 17 over mu and diagonal Sigma = diag(nu). For fixed mu the optimal
           nu_k = 1 / h_k with h_k = (-hess f(mu))_kk = N pi_k (1 - pi_k) + Lambda_kk, so eq. 17
           profiles to  g(mu) = f(mu) - 1/2 sum_k log h_k(mu) - K/2,  whose gradient equals the
           mu-gradient of eq. 17 at that nu (envelope theorem):
               grad g = grad f - N/2 [nu o (1 - 2 pi) o pi - pi sum_k nu_k (1 - 2 pi_k) pi_k].
           (This is the diagonal-Sigma derivative of app. B's Tr{hess f Sigma} term, written out
           in full.) g is maximised by Newton's method with g's own Hessian, which costs O(K^2)
           on top of hess f (fill_neg_hessian_delta), and the same line search, on g.
While q(z) still moves, each q(theta) update is solved loosely (gradient below a tenth of the last
change of s); the last one is finished to max |grad| <= gtol (1 + N), so the delta method's mu
is a stationary point of eq. 17 and Laplace's mu the maximum of f for the final q(z). (This
halves the Newton steps, about 20 -> 9 per document at K = 40 on the State of the Union.)
Each Newton step costs one K x K Cholesky factorisation (O(K^3)); conjugate gradients would
avoid it but need many O(K^2) products on these ill-conditioned systems (N pi_k spans decades).

The outer loop alternates q(z) and q(theta) (figure 1) from mu = mu_0 and stops when the
approximate objective of eq. 21 changes by less than tol per token. With Sigma at its optimum
for mu (both methods), 1/2 Tr{hess f Sigma} = -K/2, and adding the terms of the bound that
eq. 21 leaves out (E_q[log p(x | z)] and the constants of the Gaussian prior and entropy):
  L_d = sum_n c_n log(pi(mu_prev) . beta_{w_n}) - s . log pi(mu_prev) + s . log pi(mu)
        - 1/2 (mu-mu_0)' Lambda (mu-mu_0) - 1/2 log|Sigma_0| + 1/2 log|Sigma|
where mu_prev is the mean from which phi (and so s) was computed. Summed over documents and
divided by the tokens this is the paper's per-word approximate bound (fig. 5a, 6a).

Parallelism and determinism: documents are independent; a minibatch is split into chunks of
CHUNK_DOCS documents (a partition that depends on the data only) run in parallel with prange;
per-chunk partial sums of Sigma_d + mu_d mu_d' are added in chunk order by the caller. The
Monte Carlo draws of E_q[softmax(theta)] use the same standard-normal matrix `eps` for every
document (common random numbers from the caller's seed), so no result depends on threads.
"""
import numpy as np
from numba import get_thread_id, njit, prange
from .meanfield import dot_prefix

LAPLACE = 0
DELTA = 1
CHUNK_DOCS = 16
NORM_FLOOR = 1e-300
ARMIJO = 1e-4


@njit(cache=True, nogil=True)
def cholesky(A, L):
    """L lower triangular with L L' = A (A symmetric, only its lower triangle is read).
    Returns False when A is not numerically positive definite."""
    K = A.shape[0]
    for j in range(K):
        Lj = L[j]
        s = A[j, j] - dot_prefix(Lj, Lj, j)
        if not s > 0.0:
            return False
        d = np.sqrt(s)
        Lj[j] = d
        inv = 1.0 / d
        for i in range(j + 1, K):
            Li = L[i]
            Li[j] = (A[i, j] - dot_prefix(Li, Lj, j)) * inv
        for p in range(j + 1, K):
            Lj[p] = 0.0
    return True


@njit(cache=True, nogil=True)
def back_substitute(L, b, out):
    """out = L'^-1 b (if b ~ N(0, I), out ~ N(0, (L L')^-1)); column-oriented, so L is read by
    rows. out may alias b."""
    K = L.shape[0]
    for i in range(K):
        out[i] = b[i]
    for i in range(K - 1, -1, -1):
        Li = L[i]
        x = out[i] / Li[i]
        out[i] = x
        for p in range(i):
            out[p] -= Li[p] * x


@njit(cache=True, nogil=True)
def solve_cholesky(L, b, out):
    """out = (L L')^-1 b: forward then back substitution (out may not alias b)."""
    K = L.shape[0]
    for i in range(K):
        Li = L[i]
        out[i] = (b[i] - dot_prefix(Li, out, i)) / Li[i]
    back_substitute(L, out, out)


@njit(cache=True, nogil=True)
def softmax(theta, out):
    """out = softmax(theta); returns log sum_k exp(theta_k)."""
    K = theta.shape[0]
    m = theta[0]
    for k in range(1, K):
        if theta[k] > m:
            m = theta[k]
    total = 0.0
    for k in range(K):
        out[k] = np.exp(theta[k] - m)
        total += out[k]
    inv = 1.0 / total
    for k in range(K):
        out[k] *= inv
    return m + np.log(total)


@njit(cache=True, nogil=True)
def prior_quadratic(theta, mu0, lam0, diff, out):
    """out = Lambda (theta - mu_0) (diff receives theta - mu_0); returns (theta-mu_0)' Lambda (theta-mu_0)."""
    K = theta.shape[0]
    for k in range(K):
        diff[k] = theta[k] - mu0[k]
    q = 0.0
    for i in range(K):
        row = lam0[i]
        t = 0.0
        for j in range(K):
            t += row[j] * diff[j]
        out[i] = t
        q += diff[i] * t
    return q


@njit(cache=True, nogil=True)
def objective(method, theta, s, N, mu0, lam0, pi, diff, tmp):
    """f(theta) (laplace) or the profiled eq. 17, f(theta) - 1/2 sum_k log h_k (delta), up to constants.
    Leaves softmax(theta) in pi."""
    K = theta.shape[0]
    lse = softmax(theta, pi)
    value = -N * lse - 0.5 * prior_quadratic(theta, mu0, lam0, diff, tmp)
    for k in range(K):
        value += s[k] * theta[k]
    if method == DELTA:
        for k in range(K):
            value -= 0.5 * np.log(N * pi[k] * (1.0 - pi[k]) + lam0[k, k])
    return value


@njit(cache=True, nogil=True)
def _factor_with_jitter(negH, L):
    """Cholesky of negH (lower triangle), adding a growing multiple of I until it succeeds."""
    K = negH.shape[0]
    jitter = 0.0
    while not cholesky(negH, L):
        scale = 0.0
        for k in range(K):
            scale += abs(negH[k, k])
        step = 1e-12 * scale / K + 1e-300 if jitter == 0.0 else jitter
        for k in range(K):
            negH[k, k] += step
        jitter = 2.0 * step


@njit(cache=True, nogil=True)
def _fill_neg_hessian_f(N, pi, lam0, negH):
    """negH = -hess f = N (diag(pi) - pi pi') + Lambda (lower triangle)."""
    K = pi.shape[0]
    for i in range(K):
        for j in range(i + 1):
            negH[i, j] = lam0[i, j] - N * pi[i] * pi[j]
        negH[i, i] += N * pi[i]


@njit(cache=True, nogil=True)
def fill_neg_hessian_delta(N, pi, lam0, negH, c):
    """negH = -hess g (lower triangle) for the delta method's profiled objective
    g = f - 1/2 sum_k log h_k, h_k = N pi_k (1 - pi_k) + Lambda_kk:
        -hess g = -hess f - [diag(c) - c pi' - pi c' + (sum c) pi pi' + gamma (diag(pi) - pi pi')]
    with a_k = N (1 - 2 pi_k) pi_k, c_k = -N pi_k (1 - 4 pi_k) / (2 h_k) + a_k^2 / (2 h_k^2) and
    gamma = sum_k a_k / (2 h_k). c is scratch (receives c_k)."""
    K = pi.shape[0]
    csum = 0.0
    gamma = 0.0
    for k in range(K):
        h = N * pi[k] * (1.0 - pi[k]) + lam0[k, k]
        a = N * (1.0 - 2.0 * pi[k]) * pi[k]
        c[k] = -0.5 * N * pi[k] * (1.0 - 4.0 * pi[k]) / h + 0.5 * a * a / (h * h)
        csum += c[k]
        gamma += 0.5 * a / h
    _fill_neg_hessian_f(N, pi, lam0, negH)
    for i in range(K):
        for j in range(i + 1):
            corr = -c[i] * pi[j] - pi[i] * c[j] + (csum - gamma) * pi[i] * pi[j]
            if i == j:
                corr += c[i] + gamma * pi[i]
            negH[i, j] -= corr


@njit(cache=True, nogil=True)
def gradient_and_factor(method, mu, s, N, mu0, lam0, pi, nu, grad, negH, L, diff, tmp):
    """At mu: pi = softmax(mu), the ascent gradient (of f, or of the profiled eq. 17), nu (delta),
    and in L the Cholesky factor of the Newton system:
      laplace  -hess f  (so L L' = Sigma^-1)
      delta    -hess g of the profiled objective g (fill_neg_hessian_delta); where it is not
               positive definite, -hess f is used instead (still an ascent direction; the line
               search keeps the progress).
    Returns max_k |grad_k|."""
    K = mu.shape[0]
    softmax(mu, pi)
    prior_quadratic(mu, mu0, lam0, diff, tmp)
    for k in range(K):
        grad[k] = s[k] - N * pi[k] - tmp[k]
    if method == DELTA:
        ca = 0.0          # sum_k nu_k a_k
        for k in range(K):
            nu[k] = 1.0 / (N * pi[k] * (1.0 - pi[k]) + lam0[k, k])
            ca += nu[k] * N * (1.0 - 2.0 * pi[k]) * pi[k]
        for k in range(K):
            grad[k] -= 0.5 * (nu[k] * N * (1.0 - 2.0 * pi[k]) * pi[k] - pi[k] * ca)
        fill_neg_hessian_delta(N, pi, lam0, negH, diff)
        if not cholesky(negH, L):
            _fill_neg_hessian_f(N, pi, lam0, negH)
            _factor_with_jitter(negH, L)
    else:
        _fill_neg_hessian_f(N, pi, lam0, negH)
        _factor_with_jitter(negH, L)
    gmax = 0.0
    for k in range(K):
        if abs(grad[k]) > gmax:
            gmax = abs(grad[k])
    return gmax


@njit(cache=True, nogil=True)
def update_q_theta(method, s, N, mu0, lam0, max_newton, gtol, mu, pi, nu, grad, step, trial,
                   negH, L, diff, tmp):
    """Step 4 of figure 1 for fixed s: mu (in place, warm start) to the maximum of f (laplace) or
    of the profiled eq. 17 (delta), by Newton's method with Armijo backtracking, until
    max |grad| <= gtol (1 + N). Once the predicted gain (grad . step) is below what f can resolve
    in floating point, at most two full Newton steps are taken without the line search.
    On return pi = softmax(mu), nu = the optimal diag Sigma (delta) and, for laplace,
    L L' = -hess f(mu). Returns the number of Newton steps taken."""
    K = mu.shape[0]
    taken = 0
    polish = 0
    gmax = gradient_and_factor(method, mu, s, N, mu0, lam0, pi, nu, grad, negH, L, diff, tmp)
    while gmax > gtol * (1.0 + N) and taken < max_newton:
        solve_cholesky(L, grad, step)
        slope = 0.0
        for k in range(K):
            slope += grad[k] * step[k]
        if not slope > 0.0:
            break
        f0 = objective(method, mu, s, N, mu0, lam0, pi, diff, tmp)
        t = 1.0
        if slope < 1e-10 * (1.0 + abs(f0)):
            polish += 1
            if polish > 2:
                softmax(mu, pi)
                break
        else:
            accepted = False
            while t > 1e-10:
                for k in range(K):
                    trial[k] = mu[k] + t * step[k]
                if objective(method, trial, s, N, mu0, lam0, pi, diff, tmp) >= f0 + ARMIJO * t * slope:
                    accepted = True
                    break
                t *= 0.5
            if not accepted:
                softmax(mu, pi)        # keep pi consistent with mu (L, nu still are)
                break
        for k in range(K):
            mu[k] += t * step[k]
        taken += 1
        gmax = gradient_and_factor(method, mu, s, N, mu0, lam0, pi, nu, grad, negH, L, diff, tmp)
    return taken


@njit(cache=True, nogil=True)
def log_det_sigma(method, L, nu):
    """log |Sigma|: -2 sum log L_kk (laplace, Sigma = (L L')^-1), sum log nu_k (delta)."""
    K = L.shape[0]
    total = 0.0
    if method == DELTA:
        for k in range(K):
            total += np.log(nu[k])
    else:
        for k in range(K):
            total -= 2.0 * np.log(L[k, k])
    return total


@njit(cache=True, nogil=True)
def approximate_bound(method, words, s, mu, mu0, lam0, logdet0, pi, L, nu, diff, tmp):
    """The approximate objective (eq. 21 completed, see the module docstring) at mu, given the
    q(z) terms `words` = sum_n c_n log(pi_prev . beta_{w_n}) - s . log pi_prev. Leaves pi = softmax(mu)."""
    K = mu.shape[0]
    lse = softmax(mu, pi)
    bound = words - 0.5 * prior_quadratic(mu, mu0, lam0, diff, tmp) - 0.5 * logdet0 \
        + 0.5 * log_det_sigma(method, L, nu)
    for k in range(K):
        bound += s[k] * (mu[k] - lse)
    return bound


@njit(cache=True, nogil=True)
def fit_document(method, ids, counts, beta, mu0, lam0, logdet0, max_iter, tol, max_newton, gtol,
                 mu, nu, pi, token_weight, scratch, mats):
    """Nonconjugate variational inference of one document (figure 1), from mu = mu_0.

    Inexact inner solves: while q(z) is still moving, each q(theta) update stops once its
    gradient is below a tenth of the last change of s (1% of N at the first sweep); when the
    bound has converged (or max_iter sweeps ran), the last q(theta) update is finished to the
    tight tolerance gtol, so the returned mu is a stationary point for the final s.

    On return: mu, pi = softmax(mu), nu (delta: diag Sigma), mats[1] = L with L L' = -hess f(mu)
    (laplace: Sigma^-1), token_weight[n] = c_n / (pi . beta_{w_n}) (so phi_nk =
    token_weight[n] / c_n * pi_k beta_{w_n k}). Returns (sweeps, approximate bound L_d)."""
    K = mu.shape[0]
    s, acc, logpi_prev, grad = scratch[0], scratch[1], scratch[2], scratch[3]
    step, trial, diff, tmp = scratch[4], scratch[5], scratch[6], scratch[7]
    s_prev = scratch[12]
    negH, L = mats[0], mats[1]
    N = 0.0
    for j in range(ids.shape[0]):
        N += counts[j]
    for k in range(K):
        mu[k] = mu0[k]
    previous = -np.inf
    bound = -np.inf
    words = 0.0
    sweeps = 0
    while sweeps < max_iter:
        sweeps += 1
        # q(z) from the current mu (eq. 18): s_k = pi_k sum_n r_n beta_{w_n k}, r_n = c_n / norm_n
        lse = softmax(mu, pi)
        for k in range(K):
            logpi_prev[k] = mu[k] - lse
            acc[k] = 0.0
        words = 0.0
        for j in range(ids.shape[0]):
            row = beta[ids[j]]
            norm = dot_prefix(pi, row, K) + NORM_FLOOR
            words += counts[j] * np.log(norm)
            r = counts[j] / norm
            for k in range(K):
                acc[k] += r * row[k]
        change = 0.0
        for k in range(K):
            s[k] = pi[k] * acc[k]
            words -= s[k] * logpi_prev[k]
            change = max(change, abs(s[k] - s_prev[k]))
            s_prev[k] = s[k]
        inner = 0.01 * (1.0 + N) if sweeps == 1 else 0.1 * change
        # q(theta) for this s (eq. 14 or eq. 17), solved loosely while s is still moving
        update_q_theta(method, s, N, mu0, lam0, max_newton, max(gtol, inner / (1.0 + N)), mu, pi, nu,
                       grad, step, trial, negH, L, diff, tmp)
        bound = approximate_bound(method, words, s, mu, mu0, lam0, logdet0, pi, L, nu, diff, tmp)
        if abs(bound - previous) <= tol * N:
            break
        previous = bound
    # finish the last q(theta) update to the tight tolerance
    if update_q_theta(method, s, N, mu0, lam0, max_newton, gtol, mu, pi, nu, grad, step, trial,
                      negH, L, diff, tmp) > 0:
        bound = approximate_bound(method, words, s, mu, mu0, lam0, logdet0, pi, L, nu, diff, tmp)
    softmax(mu, pi)
    for j in range(ids.shape[0]):
        token_weight[j] = counts[j] / (dot_prefix(pi, beta[ids[j]], K) + NORM_FLOOR)
    return sweeps, bound


@njit(cache=True, nogil=True)
def add_second_moment(method, mu, nu, L, work, out):
    """out += Sigma_d + mu mu' (full K x K). laplace: Sigma = (L L')^-1 = W' W with W = L^-1."""
    K = mu.shape[0]
    if method == DELTA:
        for k in range(K):
            out[k, k] += nu[k]
    else:
        # W = L^-1 (lower triangular), row by row: L[i, i] W[i] = e_i - sum_{p<i} L[i, p] W[p]
        for i in range(K):
            Wi = work[i]
            Li = L[i]
            for j in range(K):
                Wi[j] = 0.0
            for p in range(i):
                a = Li[p]
                Wp = work[p]
                for j in range(p + 1):
                    Wi[j] -= a * Wp[j]
            inv = 1.0 / Li[i]
            for j in range(i):
                Wi[j] *= inv
            Wi[i] = inv
        # Sigma_ij = sum_{k >= max(i, j)} W_ki W_kj, accumulated row by row of W
        for k in range(K):
            Wk = work[k]
            for i in range(k + 1):
                a = Wk[i]
                row = out[i]
                for j in range(k + 1):
                    row[j] += a * Wk[j]
    for i in range(K):
        row = out[i]
        for j in range(K):
            row[j] += mu[i] * mu[j]


@njit(cache=True, nogil=True)
def expected_proportions(method, mu, nu, L, eps, theta, draw, z, p):
    """theta = (1/S) sum_s softmax(mu + A eps_s) with A A' = Sigma: a Monte Carlo estimate of
    E_q[softmax(theta)] with the caller's standard-normal draws eps (S x K)."""
    K = mu.shape[0]
    S = eps.shape[0]
    for k in range(K):
        theta[k] = 0.0
    for r in range(S):
        if method == DELTA:
            for k in range(K):
                draw[k] = mu[k] + np.sqrt(nu[k]) * eps[r, k]
        else:
            back_substitute(L, eps[r], z)
            for k in range(K):
                draw[k] = mu[k] + z[k]
        softmax(draw, p)
        for k in range(K):
            theta[k] += p[k]
    inv = 1.0 / S
    for k in range(K):
        theta[k] *= inv


@njit(parallel=True, cache=True)
def fit_batch(method, indptr, indices, counts, beta, mu0, lam0, logdet0, max_iter, tol, max_newton,
              gtol, eps, want_moments, mu, var, theta, token_weight, sweeps, bound, second,
              chunk_thread):
    """fit_document for every document of a CSR block, in parallel over chunks of CHUNK_DOCS.

    Outputs per document d: mu[d], var[d] (diag Sigma_d; laplace: only when want_moments),
    theta[d] (E_q[softmax] from eps; softmax(mu_d) when eps has no rows), token_weight,
    sweeps[d], bound[d]. second[c] (one K x K per chunk) receives sum over the chunk's
    documents of Sigma_d + mu_d mu_d' when want_moments. chunk_thread[c]: the thread of chunk c.
    """
    D = indptr.shape[0] - 1
    K = beta.shape[1]
    n_chunks = (D + CHUNK_DOCS - 1) // CHUNK_DOCS
    for c in prange(n_chunks):
        chunk_thread[c] = get_thread_id()
        scratch = np.empty((13, K))
        mats = np.empty((3, K, K))
        pi, nu, z, p = scratch[8], scratch[9], scratch[10], scratch[11]
        if want_moments:
            for i in range(K):
                for j in range(K):
                    second[c, i, j] = 0.0
        for d in range(c * CHUNK_DOCS, min(D, (c + 1) * CHUNK_DOCS)):
            lo = indptr[d]
            hi = indptr[d + 1]
            for k in range(K):
                nu[k] = 0.0
            sw, b = fit_document(method, indices[lo:hi], counts[lo:hi], beta, mu0, lam0, logdet0,
                                 max_iter, tol, max_newton, gtol, mu[d], nu, pi, token_weight[lo:hi],
                                 scratch, mats)
            sweeps[d] = sw
            bound[d] = b
            L = mats[1]
            if method == DELTA:
                for k in range(K):
                    var[d, k] = nu[k]
            if want_moments:
                add_second_moment(method, mu[d], nu, L, mats[2], second[c])
                if method == LAPLACE:
                    W = mats[2]
                    for k in range(K):
                        t = 0.0
                        for r in range(k, K):
                            t += W[r, k] * W[r, k]
                        var[d, k] = t
            elif method == LAPLACE:
                for k in range(K):
                    var[d, k] = np.nan
            if eps.shape[0] > 0:
                expected_proportions(method, mu[d], nu, L, eps, theta[d], scratch[0], z, p)
            else:
                softmax(mu[d], theta[d])
