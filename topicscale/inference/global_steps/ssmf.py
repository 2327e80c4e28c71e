"""Global step "ssmf": full structured stochastic mean-field (Hoffman and Blei 2015, Algorithm 1,
applied to LDA in sec. 3). SSMF-A (global_steps/ssmf_a.py) is its approximation (eq. 29); this is the
stochastic natural gradient of eq. 26 itself.

Each minibatch S (|S| documents) at step t (t = model.step + 1, 1-based as in the paper):

    3: rho_t = (tau + t - 1)^-kappa; N_t = min(documents seen including S, N)   (the ramp)
    5: u ~ Uniform, beta = R(u, lambda): for every topic k and EVERY word v,
       beta'_kv ~ Gamma(lambda_kv, 1), beta_kv = beta'_kv / sum_v beta'_kv        (eqs. 33-34)
    6: z of S given beta with the local step (Gibbs by default; mean-field or CVB0)
    7: lambda_k <- (1 - rho_t) lambda_k + rho_t (eta + N_t/|S| F_k^-1 J_k^T c_k)    (eq. 26)
       then the projection lambda <- max(lambda, min_lambda) (below)

c_k is topic k's word counts in S from the local step (eq. 36, V entries, zero off S),
J_k = (dt/dbeta)(dR/dlambda) the V x V Jacobian of eq. 35 and F_k the Fisher matrix of eq. 38.

Eq. 35 without V x V matrices. With beta' = R-hat(u, lambda) (independent gamma quantiles),
S = sum_v beta'_v and h_v = d log beta'_v / d lambda_v (eq. 15, kernels/ssmf.py), eq. 35 reads
J[v, j] = (1/(beta_v S)) (delta_vj - beta_v) beta'_j h_j
        = h_j (delta_vj beta'_j / beta'_v - beta_j),     so
    (J^T c)_j = h_j (c_j - C beta_j),          C = sum_v c_v,
one multiply per entry and no division by a (possibly underflowed) beta'_v: everything is
computed from log beta' (the log-space draw of SSMF-A, `log_gamma_variates`).

Eq. 38 inverted in O(V) (matrix inversion lemma, Sherman-Morrison): F = D - c 1 1^T with
D = diag(psi'(lambda_v)), c = psi'(sum_v lambda_v), so for g = J^T c
    F^-1 g = D^-1 g + D^-1 1 * c (1^T D^-1 g) / (1 - c 1^T D^-1 1).
F is positive definite (the covariance of log beta under the Dirichlet), so the denominator
is positive.

Every word is drawn. SSMF-A draws only the minibatch's words plus one aggregated "rest" gamma
per topic (exact for the local step, which reads beta only at the minibatch's words), but eq. 35
gives each word off the minibatch its own gradient, -h_j C beta_j, which depends on its own
draw; a shared gradient for all of them would not be eq. 35. So V x K gammas and quantile
derivatives per minibatch, which makes a pass dearer than SSMF-A's (the paper: SSMF iterations
took about 25% longer than mean-field ones; ours: benchmarks/results/matrix_k100.md).

Projection. The stochastic natural gradient can be negative (an entry with no count in S gets
-N_t/|S| h_j C beta_j / psi'(lambda_j) plus the rank-one term), and with rho_t near 1 (the first
steps) lambda_kv can leave the domain lambda > 0 of the Dirichlet. After each update, entries
below `min_lambda` (default eta / 100) are set to it: the Euclidean projection onto
{lambda >= min_lambda}; the number of entries it moved in the step is reported as
metrics["projected"] (and "projected_share" of the V K entries). The floor is not eta: unlike
mean-field and SSMF-A, SSMF's own updates take many entries below eta (a floor at eta moved
an order of magnitude more entries a step than eta / 100).

Step size: tau = 10 by default, not the paper's tau = 1. With rho_1 = (tau + 0)^-kappa = 1 the
first step sets lambda to eta + one natural-gradient sample, and that sample is negative for
about half of the entries with no count in the minibatch (its mean is the counts, eq. 27, but
its noise is of the order of lambda itself): most entries are projected at step 1 and the
topics' supports freeze. With tau = 10 (rho_1 = 0.18) SSMF ends about where SSMF-A does, where
with tau = 1 it ends far below (NYT, K = 100: benchmarks/results/matrix_k100.md); on the planted
corpus of the conformance tests, tau = 1 made held-out likelihood fall with the CVB0 local step.
`--tau 1` gives the paper's schedule.

Randomness: numpy.random.default_rng([seed, model.step]) draws the gammas (in a fixed order)
and then one seed for the local step (which derives per-document seeds from it), so a run is
the same whatever the number of threads. No state is kept between minibatches (the step
counter and lambda are in the model), so checkpoints need nothing from this class.
"""
import numpy as np

from ..local_steps.base import minibatch_words, step_metrics
from ..priors import update_priors
from ..schedule import advance, robbins_monro
from .ssmf_a import SSMFA, log_gamma_variates, ramp


def log_normalise(log_x):
    """log of x / colsum(x) for x = exp(log_x) (V x K), computed in log space."""
    top = log_x.max(axis=0)
    return log_x - (top + np.log(np.exp(log_x - top[None, :]).sum(axis=0)))[None, :]


def quantile_derivatives(lam, log_x):
    """h = d log beta' / d lambda (V x K) at the draws log_x (eq. 15, kernels/ssmf.py)."""
    from ...kernels.ssmf import dlog_quantile_dshape_array
    lam = np.ascontiguousarray(lam, dtype=np.float64)
    h = np.empty_like(lam)
    dlog_quantile_dshape_array(lam, np.ascontiguousarray(log_x, dtype=np.float64), h)
    return h


def natural_gradient(lam, log_x, counts, h=None):
    """F_k^-1 J_k^T c_k for every topic k (columns of V x K arrays), eqs. 35 and 38.

    lam: lambda (V x K, word-major); log_x: log beta'_kv, the gamma draws at lam; counts: c_kv
    (V x K, zero for words outside the minibatch); h: d log beta'/d lambda if already computed.
    """
    from ...kernels.ssmf import trigamma_array
    lam = np.ascontiguousarray(lam, dtype=np.float64)
    h = quantile_derivatives(lam, log_x) if h is None else h
    beta = np.exp(log_normalise(log_x))
    total = counts.sum(axis=0)                                    # C_k
    g = h * (counts - total[None, :] * beta)                      # J^T c (eq. 35)
    d = np.empty_like(lam)
    trigamma_array(lam, d)                                        # diag of eq. 38
    c = np.empty((1, lam.shape[1]))
    trigamma_array(lam.sum(axis=0)[None, :], c)                   # psi'(sum_v lambda_kv)
    c = c[0]
    inv_d = 1.0 / d
    y = g * inv_d
    b = c * y.sum(axis=0) / (1.0 - c * inv_d.sum(axis=0))         # Sherman-Morrison
    return y + inv_d * b[None, :]


class SSMF(SSMFA):
    """Full SSMF (Algorithm 1): sample every topic's beta by (the equivalent of) inversion, run the
    local step given it, and take the stochastic natural-gradient step of eq. 26 with the ramp,
    projected onto lambda >= min_lambda (default eta / 100). ramp=False uses N_t = N throughout.
    """
    name = "ssmf"
    # The paper's settings (sec. 4: minibatches of 1,000, alpha = 0.1, rho_t = t^-0.75) except
    # tau = 10 (rho_1 = 0.18) instead of tau = 1 (rho_1 = 1): see "Step size" in the module
    # docstring.
    DEFAULTS = {"alpha": 0.1, "tau": 10.0, "kappa": 0.75, "batch_size": 1000}

    def __init__(self, model, local, corpus_docs, tau=10.0, kappa=0.75, ramp=True, seed=0,
                 min_lambda=None):
        super().__init__(model, local, corpus_docs, tau=tau, kappa=kappa, ramp=ramp, seed=seed)
        if min_lambda is not None and not min_lambda > 0:
            raise ValueError("min_lambda must be > 0")
        self.min_lambda = None if min_lambda is None else float(min_lambda)
        self.last_projected = 0

    def floor(self):
        return self.min_lambda if self.min_lambda is not None else self.model.eta / 100.0

    def draw(self, rng):
        """Step 5: log beta'_kv ~ log Gamma(lambda_kv, 1) for every word and topic (V x K)."""
        return log_gamma_variates(self.model.settle(), rng)

    def step(self, batch):
        m = self.model
        rng = np.random.default_rng([self.seed, m.step])
        log_x = self.draw(rng)
        words = minibatch_words(batch)
        log_beta = log_normalise(log_x)[words]
        rows = np.exp(log_beta - log_beta.max(axis=1, keepdims=True))
        stats, result = self.local_statistics(batch, rows, rng)
        self.update(stats, log_x)
        update_priors(m, result, self.last_rho)
        V, K = m.n_words, m.n_topics
        return {"rho": self.last_rho, "n_t": self.last_n, "projected": self.last_projected,
                "projected_share": self.last_projected / (V * K), **step_metrics(result)}

    def update(self, stats, log_x):
        """Algorithm 1, steps 3 and 7 (eq. 26), then the projection. log_x: the step-5 draws."""
        m = self.model
        lam = m.settle()                    # lambda, settled and read-only (eq. 26 moves every entry)
        rho = robbins_monro(m.step, self.tau, self.kappa)
        n_t = ramp(m.docs_seen + stats.n_docs, self.corpus_docs) if self.ramp else self.corpus_docs
        new = (1.0 - rho) * lam + rho * m.eta
        if stats.n_docs:
            counts = np.zeros_like(lam)
            counts[stats.words] = stats.word_topic
            new += (rho * n_t / stats.n_docs) * natural_gradient(lam, log_x, counts)
        low = new < self.floor()            # NaN stays (the driver's non-finite guard sees it)
        new[low] = self.floor()
        m.lam = new                         # lambda replaced (the setter: its kept column sums go)
        advance(m, stats.n_docs)
        self.last_rho, self.last_n = rho, n_t
        self.last_projected = int(np.count_nonzero(low))
