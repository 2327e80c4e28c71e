"""Global step "svi" of the HDP topic model: HDPSVI, stochastic variational inference (SVI paper,
sec. 3.3, figure 9, steps 11-12): lambda and the corpus sticks (a, b) move towards their
minibatch estimates with the step size rho_t = (tau + t)^-kappa of LDA's SVI
(inference/schedule.py). Its statistics are HDPStats (topicscale/stats.py). Two views of the
document level, chosen by the local step:

* `--local hdp`, the paper's: the two-level stick-breaking document step (figure 9, steps 4-10;
  local_steps/hdp.py, truncations K and T), which counts each document's occupied slots itself.
* `--local meanfield` or `cvb0` (chosen as for LDA: runs.default_local), the direct-assignment
  view (Teh, Jordan, Beal and Blei 2006, sec. 5.3; the collapsed variational HDP of Teh, Kurihara
  and Welling 2008 and Sato, Kurihara and Nakagawa 2012, "Practical collapsed variational Bayes
  inference for hierarchical Dirichlet process", made stochastic as SCVB0 made CVB0): theta_d ~ Dir(alpha0 sigma(V)) over
  the K corpus topics, so the document step is LDA's on E[beta] with the asymmetric prior
  alpha_k = alpha0 E[sigma_k(V)] (HDPPrior.dirichlet), at LDA's cost for K topics. The sticks
  count each document's expected tables m_dk from its Dirichlet posterior gamma_d
  (kernels/tables.py). Mean-field's E[log theta] all but switches off a topic whose prior
  alpha_k is small unless the document has real evidence for it, so the weight gathers on
  the topics in use; CVB0 keeps every topic in use (tests/test_hdp_direct.py).

The paper's step: one departure from figure 9, step 11, in what the corpus sticks count. The paper's estimate
a_hat_k = 1 + D sum_{i<=T} zeta_dik counts all T slots of a document, also the slots that hold
no token. The coordinate update leaves such a slot at q(c_di = k) proportional to
exp(E[log sigma_k(V)]), the corpus sticks' own current shape, so every document adds T - (slots
it uses) phantom counts that pull the sticks back to wherever they are: on planted data most
stick counts were phantom, and nearly all K topics carried weight E[sigma_k(V)] while a few
held the tokens. In the model a slot without tokens carries no information about V (the
document's infinitely many unused slots integrate out; in the Chinese restaurant franchise they
are tables nobody sits at), so the sticks count each slot by the probability that it is occupied,
P(slot i holds a token) = 1 - prod_n (1 - phi_dni)^c_dn:

    a_hat_k = 1 + D/|S| sum_d m_dk,   b_hat_k = omega + D/|S| sum_d sum_{l>k} m_dl,
    m_dk = sum_i P(slot i occupied) zeta_dik   (expected tables of document d serving topic k)

which is the conditional of the sticks given the table counts m (Teh et al. 2006's posterior of
the corpus weights). Topics and documents are updated exactly as in figure 9. Counting occupied
slots leaves held-out likelihood as it was and concentrates the weight on the topics in use
(benchmarks/results/hdp.md).
"""
from functools import cached_property

import numpy as np

from ...kernels.tables import expected_tables
from ...stats import HDPStats
from ..local_steps.base import estep_statistics, one_word_batch, step_metrics
from ..schedule import advance, robbins_monro
from .svi import SVI, warm_up_update


STICK_TOL = 1e-4         # refit_sticks: rounds until no topic's weight moves by this
STICK_ROUNDS = 10


class TableCounting:
    """An LDA document step under the HDP's prior whose statistics carry each document's
    expected table counts m_dk (direct assignment, module docstring): HDPStats computed where
    the step runs, in this process or on a dask worker, and summed over chunks like the rest."""

    def __init__(self, local):
        self.local = local

    def __getattr__(self, name):            # the wrapped step's estep_topics, name, ...
        if name == "local" or name.startswith("__"):
            raise AttributeError(name)      # (unpickling, before `local` is set)
        return getattr(self.local, name)

    def statistics(self, batch, model, topics, seed=None):
        stats, result = self.local.statistics(batch, model, topics, seed=seed)
        tables = np.zeros(model.n_topics)
        if result.gamma.shape[0]:
            expected_tables(np.ascontiguousarray(result.gamma), model.local_prior().dirichlet, tables)
        return HDPStats(stats.words, stats.word_topic, stats.n_docs, stats.n_tokens, tables), result


class HDPSVI(SVI):
    """Figure 9, steps 11-12, for a minibatch S of a corpus of D documents:

        lambda <- (1 - rho) lambda + rho (eta + D/|S| sum_d sum_i zeta_dik sum_n c_dn phi_dni w_dn)
        a_k    <- (1 - rho) a_k    + rho (1 + D/|S| sum_d m_dk)
        b_k    <- (1 - rho) b_k    + rho (omega + D/|S| sum_d sum_{l>k} m_dl)

    for k < K (v_K = 1), with m_dk the expected occupied slots of document d pointing to topic
    k (module docstring). DEFAULTS fill the document truncation and omega when unset, so the
    model's settings record the values used.
    """
    name = "svi"
    DEFAULTS = {"doc_truncation": 15, "omega": 1.0}

    def step(self, batch):
        """One minibatch: the local step on its default topics, its table counts, the update."""
        stats, result = self.statistics(batch)
        self.update(stats)
        return {"rho": self.last_rho, **step_metrics(result)}

    def statistics(self, batch):
        """The local step's statistics with the corpus sticks' table counts (HDPStats): the
        paper's step counts them itself; an LDA document step gets them from each document's
        Dirichlet posterior gamma_d (TableCounting, kernels/tables.py)."""
        return estep_statistics(self.document_step, batch, self.model)

    @cached_property
    def document_step(self):
        """The local step as the statistics are taken: the paper's, or an LDA document step with
        table counts (one wrapper a run: a dask executor keeps a copy of it on each worker)."""
        return self.local if getattr(self.local, "name", None) == "hdp" else TableCounting(self.local)

    def warm_up(self, batch=None):
        """Load (or compile) the local step's kernels, the table counts' and the update's on a
        minibatch of one token (`batch`: a distributed run's, run on every worker; not counted as
        training time); leaves the model untouched."""
        self.statistics(one_word_batch() if batch is None else batch)
        warm_up_update(self.model.n_topics)

    def update(self, stats):
        m = self.model
        rho = robbins_monro(m.step, self.tau, self.kappa)
        scale = self.corpus_docs / stats.n_docs
        m.update_topics(rho, stats.words, rho * scale, stats.word_topic)
        if m.residual is not None:
            m.residual *= 1.0 - rho
        self._move_sticks(rho, scale * stats.tables)
        advance(m, stats.n_docs)
        self.last_rho = rho

    def _move_sticks(self, rho, tables):
        """Steps 11-12 for the sticks: (a, b) towards (1 + m_k, omega + sum_{l>k} m_l), `tables`
        the corpus's table counts m (K) as the minibatch estimates them."""
        m = self.model
        later = np.cumsum(tables[::-1])[::-1]          # later[k] = sum_{l >= k} tables[l]
        m.a *= 1.0 - rho
        m.a += rho * (1.0 + tables[:-1])
        m.b *= 1.0 - rho
        m.b += rho * (m.omega + later[1:])

    def refit_sticks(self, documents):
        """Set the corpus sticks to their conditional given the topics as they are: the stick step
        at rho = 1 with the table counts of `documents` (a sample of the training documents)
        scaled to the corpus, counted under the sticks of the round before, until no weight moves
        by STICK_TOL (at most STICK_ROUNDS rounds). Run after the merges and the polish: a merge
        sums two topics' weights, where a document serving both from one topic needs fewer
        tables, and the sweeps move tokens with the sticks held, so the weights that `topics`
        lists and `infer` takes as the document prior no longer follow the topics. The topics the
        merges emptied (lambda = eta) count no tables (the document step can give them a few rare
        words). Leaves lambda as it is; returns the documents counted and the rounds."""
        from ...polish import emptied
        m, blocks = self.model, list(documents.blocks())
        empty, weights = emptied(m), m.topic_weights()
        for rounds in range(1, STICK_ROUNDS + 1):
            tables = np.zeros(m.n_topics)
            for block in blocks:
                tables += self.statistics(block)[0].tables
            tables[empty] = 0.0
            self._move_sticks(1.0, self.corpus_docs / documents.n_docs * tables)
            before, weights = weights, m.topic_weights()
            if np.abs(weights - before).max() < STICK_TOL:
                break
        return {"docs": documents.n_docs, "rounds": rounds}
