"""Global step "ssmf-a": approximate structured stochastic mean-field (Hoffman and Blei 2015,
Algorithm 2 "SSMF-A", applied to LDA in sec. 3).

Each minibatch S (|S| documents) at step t (t = model.step + 1, 1-based as in the paper):

    3: rho_t = (tau + t - 1)^-kappa  (the paper's rho = t^-0.75: tau = 1, kappa = 0.75);
       N_t = min(documents seen including this minibatch, N)   (the ramp; = min(t |S|, N))
    5: sample beta ~ q(beta) = prod_k Dir(beta_k; lambda_k)
    6: sample the minibatch's z given beta with the local step (Gibbs by default)
    7: lambda <- (1 - rho_t) lambda + rho_t (eta + N_t / |S| * counts of S)

Step 5 needs beta only at the minibatch's words. By the aggregation property of the Dirichlet,
(beta_k[words], 1 - sum beta_k[words]) ~ Dir(lambda_k[words], sum of lambda_k over the other
words), so drawing len(words) + 1 gammas per topic is an exact draw of those entries. Shapes
near eta = 0.01 make gamma variates underflow, so they are drawn in log space:
log G(a) = log G(a + 1) + log(U) / a, with G(a + 1) ~ Gamma(a + 1, 1), U ~ Uniform(0, 1).
The local step gets each row of the sample scaled so its largest entry is 1: the local steps'
conditionals for a word are invariant to scaling its row, and this keeps a row from
underflowing to all zeros.

All randomness comes from numpy.random.default_rng([seed, model.step]): the beta sample and
one seed handed to the local step (which derives per-document seeds from it), so a run is
the same whatever the number of threads.
"""
import numpy as np

from ..local_steps.base import minibatch_statistics, minibatch_words, step_metrics
from ..priors import update_priors
from ..schedule import advance, robbins_monro
from .svi import SVI


def ramp(docs_seen, corpus_docs):
    """N_t = min(t |S|, N): the SSMF paper's ramp of the effective data size (sec. 2.2)."""
    return min(docs_seen, corpus_docs)


def log_gamma_variates(shapes, rng):
    """log G, G ~ Gamma(shapes, 1) elementwise, in log space (shapes near 0.01 underflow):
    log G(a) = log G(a + 1) + log(U) / a. Shape 0 gives -inf. (Also used by full SSMF.)"""
    with np.errstate(divide="ignore"):
        return np.log(rng.standard_gamma(shapes + 1.0)) + np.log(rng.random(shapes.shape)) / shapes


def sample_topic_rows(lam, words, rng, colsum=None):
    """log beta[words] (len(words) x K) for beta_k ~ Dir(lam[:, k]), exact on those entries.

    Returns (log_beta, rows) where rows = exp(log_beta - rowmax), each row's maximum 1.
    """
    if words.shape[0] == 0:
        return np.empty((0, lam.shape[1])), np.empty((0, lam.shape[1]))
    lam_rows = lam[words]
    colsum = lam.sum(axis=0) if colsum is None else colsum
    if words.shape[0] == lam.shape[0]:
        rest = np.zeros(lam.shape[1])
    else:
        rest = np.maximum(colsum - lam_rows.sum(axis=0), 0.0)
    shapes = np.vstack([lam_rows, rest[None, :]])               # (len(words) + 1) x K
    log_g = log_gamma_variates(shapes, rng)                     # shape 0 (empty rest): -inf
    top = log_g.max(axis=0)
    log_norm = top + np.log(np.exp(log_g - top[None, :]).sum(axis=0))
    log_beta = log_g[:-1] - log_norm[None, :]
    rows = np.exp(log_beta - log_beta.max(axis=1, keepdims=True))
    return log_beta, rows


class SSMFA:
    """SSMF-A: sample beta from q, run the local step given it, SVI-style update with the ramp.

    ramp=False uses N_t = N from the start (plain SVI scaling).
    """
    name = "ssmf-a"
    DEFAULTS = {"alpha": 0.1, "tau": 1.0, "kappa": 0.75, "batch_size": 1000}

    def __init__(self, model, local, corpus_docs, tau=1.0, kappa=0.75, ramp=True, seed=0):
        self.model = model
        self.local = local
        self.corpus_docs = int(corpus_docs)
        self.tau = float(tau)
        self.kappa = float(kappa)
        self.ramp = bool(ramp)
        self.seed = int(seed)
        self.last_rho = self.last_n = None

    def step(self, batch):
        m = self.model
        rng = np.random.default_rng([self.seed, m.step])
        words = minibatch_words(batch)
        m.settle()      # step 5 reads all of lambda (column sums): settle in place, not a fresh copy
        _, rows = sample_topic_rows(m.lam, words, rng)
        stats, result = self.local_statistics(batch, rows, rng)
        self.update(stats)
        update_priors(m, result, self.last_rho)
        return {"rho": self.last_rho, "n_t": self.last_n, **step_metrics(result)}

    def local_statistics(self, batch, rows, rng):
        """Step 6: the local step on the minibatch given the sampled topic rows (one row per
        distinct word of the batch, ascending), whatever topics the step would choose itself
        (e.g. mean-field's estep_beta), with a seed drawn from `rng`. Returns
        (SufficientStats, result)."""
        local_seed = int(rng.integers(0, 2 ** 63))
        return minibatch_statistics(self.local, batch, self.model, rows, seed=local_seed)

    warm_up = SVI.warm_up           # load the kernels before the timed run (train)

    def update(self, stats):
        """Algorithm 2, steps 3 and 7."""
        m = self.model
        rho = robbins_monro(m.step, self.tau, self.kappa)
        n_t = ramp(m.docs_seen + stats.n_docs, self.corpus_docs) if self.ramp else self.corpus_docs
        scale = rho * n_t / stats.n_docs if stats.n_docs else 0.0
        m.update_topics(rho, stats.words, scale, stats.word_topic)
        advance(m, stats.n_docs)
        self.last_rho, self.last_n = rho, n_t
