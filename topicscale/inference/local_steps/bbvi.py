"""Local step "bbvi": black-box variational inference as the correlated topic model's document
step (Ranganath, Gerrish and Blei 2014, through the engine inference/bbvi.py): `--model ctm
--local bbvi`, an alternative to the Laplace and delta-method steps of local_steps/ctm.py, with
the same contract (`fit`, `estep_topics`, `statistics(batch, model, topics, seed=None)` from
_CTMLocal, results as CTMResult, statistics as CTMStats).

Per document d, with the topics beta and the logistic-normal prior N(mu_0, Sigma_0) fixed and the
topic assignments z summed out,

    log p(w_d, theta_d) = sum_n c_n log(softmax(theta_d) . beta_{w_n}) + log N(theta_d | mu_0, Sigma_0),

and q(theta_d) = prod_k N(m_dk, s_dk^2) (mean field, like the delta method's diagonal Sigma),
started at the prior's means and marginal standard deviations. The documents of a block are the
local factors of one BBVI problem without global variables (`inference.bbvi.fit_local`), so
every gradient step is vectorised over the block. The Markov blanket of theta_dk is its own
document's words and prior (the softmax and Sigma_0 couple all K coordinates), so
Rao-Blackwellization drops the other documents' terms and the other factors' log q; control
variates and AdaGrad as in the engine; the last `average` fraction of the iterates is averaged.

Outputs, as the kernel's: mu, var (diag Sigma_d), E_q[softmax(theta_d)] from the local step's
common antithetic draws (or softmax(mu_d) for predictive="paper"), token weights
c_n / (softmax(mu_d) . beta_{w_n}) (so q(z) is eq. 18's phi at mu_d, as in the Laplace and
delta steps), and per document an estimate of the ELBO (with z summed out, constants included)
from the same draws. Random numbers: seeded by `seed` and the block's contents; no threads, so
the result does not depend on the thread count.
"""
import math

import numpy as np

from .. import bbvi as bb
from .ctm import CTMResult, _CTMLocal

LOG_2PI = math.log(2.0 * math.pi)


def _softmax(theta):
    a = theta - theta.max(axis=-1, keepdims=True)
    np.exp(a, out=a)
    a /= a.sum(axis=-1, keepdims=True)
    return a


def _segment_sums(values, segment, n_segments):
    """Row sums of `values` (n x S) grouped by `segment` (n, sorted): (n_segments x S)."""
    starts = np.searchsorted(segment, np.arange(n_segments))
    out = np.add.reduceat(values, np.minimum(starts, max(len(segment) - 1, 0)), axis=0) if len(segment) \
        else np.zeros((n_segments, values.shape[1]))
    empty = np.diff(np.append(starts, len(segment))) == 0
    out[empty] = 0.0
    return out


class _Documents:
    """The bbvi model of a block of documents: one local Normal factor per (document, topic)."""

    def __init__(self, indptr, indices, counts, beta, prior):
        import scipy.sparse as sp
        self.D = indptr.shape[0] - 1
        self.K = beta.shape[1]
        self.doc = np.repeat(np.arange(self.D), np.diff(indptr))
        self.counts = np.asarray(counts, dtype=np.float64)
        self.beta_tok = np.ascontiguousarray(beta[indices])            # nnz x K
        nnz = self.doc.shape[0]
        # M[n, d_n K + k] = beta_{w_n k}: the token probabilities of all samples are M @ pi
        cols = (self.doc[:, None] * self.K + np.arange(self.K)[None, :]).ravel()
        self.M = sp.csr_matrix((self.beta_tok.ravel(), cols, np.arange(0, nnz * self.K + 1, self.K)),
                               shape=(nnz, self.D * self.K))
        self.mu0, self.lam0, self.logdet0 = prior.mu0, prior.precision, float(prior.logdet)
        self.n_data = self.D
        sd0 = np.sqrt(np.diag(np.linalg.inv(self.lam0)))
        self._families = {"theta": bb.Normal((self.D, self.K), mean=np.tile(self.mu0, self.D),
                                             log_sd=np.tile(np.log(sd0), self.D))}
        self._index = np.arange(self.D * self.K).reshape(self.D, self.K)

    def variables(self):
        return {}

    def local_variables(self, batch):
        return self._families

    def log_joint(self, theta):
        """(S, D): log p(w_d, theta_d) at each sample, constants included."""
        S = theta.shape[0]
        pi = _softmax(theta.copy())
        p = np.asarray(self.M @ pi.reshape(S, -1).T)                    # nnz x S
        lp = self.counts[:, None] * np.log(np.maximum(p, 1e-300))
        ll = _segment_sums(lp, self.doc, self.D).T
        d = (theta - self.mu0).reshape(-1, self.K)
        prior = (-0.5 * np.sum((d @ self.lam0) * d, axis=1)).reshape(S, self.D)
        return ll + prior - 0.5 * self.logdet0 - 0.5 * self.K * LOG_2PI

    def terms(self, z, batch):
        return [bb.Term(self.log_joint(z["theta"]), {"theta": self._index})]


class BBVI(_CTMLocal):
    """Black-box VI document step: mean-field Gaussian q(theta_d), score-function gradients with
    Rao-Blackwellization and control variates, AdaGrad (bbvi_iter steps of bbvi_samples draws,
    eta = step_size), averaging the last `average` of the iterates."""
    method = None
    name = "bbvi"

    def __init__(self, seed=0, samples=200, predictive="mean", bbvi_iter=150, bbvi_samples=8,
                 step_size=0.5, average=0.5):
        super().__init__(seed=seed, samples=samples, predictive=predictive)
        self.bbvi_iter = int(bbvi_iter)
        self.bbvi_samples = int(bbvi_samples)
        self.step_size = float(step_size)
        self.average = float(average)

    def run(self, indptr, indices, counts, topics, prior, moments=False, proportions=True):
        indptr = np.asarray(indptr, dtype=np.int64)
        D, K = indptr.shape[0] - 1, topics.shape[1]
        model = _Documents(indptr, indices, counts, np.asarray(topics, dtype=np.float64), prior)
        content = int(np.sum(np.asarray(indices, dtype=np.int64) * 7 + np.asarray(counts, dtype=np.int64))
                      % (1 << 31)) if len(indices) else 0
        rng = np.random.default_rng([self.seed, 0xBB, D, content])
        batch = np.arange(D)
        params = bb.fit_local(model, {}, batch, rng, self.bbvi_samples, self.bbvi_iter, self.step_size,
                              average=self.average)["theta"]
        mu = np.ascontiguousarray(params[:, 0].reshape(D, K))
        sd = np.exp(params[:, 1]).reshape(D, K)
        var = sd * sd
        pi = _softmax(mu.copy())
        p = np.einsum("nk,nk->n", pi[model.doc], model.beta_tok)
        token_weight = np.asarray(counts, dtype=np.float64) / np.maximum(p, 1e-300)
        eps = self.draws(K)                                   # common antithetic draws
        draws = mu[None, :, :] + sd[None, :, :] * eps[:, None, :]          # samples x D x K
        entropy = np.sum(np.log(sd), axis=1) + 0.5 * K * (1.0 + LOG_2PI)
        bound = model.log_joint(draws).mean(axis=0) + entropy
        if proportions and self.predictive == "mean":
            theta = _softmax(draws).mean(axis=0)
        else:
            theta = pi
        result = CTMResult(mu, var, theta, token_weight, np.full(D, self.bbvi_iter, dtype=np.int64),
                           bound, 1, self.predictive)
        second = None
        if moments:
            second = (np.diag(var.sum(axis=0)) + mu.T @ mu)[None, :, :]
        return result, second
