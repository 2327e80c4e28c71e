"""The topics of the Dirichlet-topic models (LDA, HDP): the variational Dirichlet parameters
lambda (SVI paper, sec. 3.2), held lazily so that a global step touches only its minibatch's rows.

lambda is stored word-major (V x K, row w holds lambda_{1..K, w}) so that the E-step's inner
loop over topics reads contiguous memory; `export` writes the usual K x V matrix.
"""
import numpy as np

from . import store

DEFAULT_TOPICS = 100      # K without -k, for every model (the HDP's corpus truncation too)
DEFAULT_ETA = 0.01        # the topics' Dirichlet prior without --eta, for every model
# the lazy global step settles lambda (one pass over V x K) when its scale would fall below this
SETTLE_BELOW = 1e-30


def token_shares(lam, eta, residual=0.0):
    """Share of the corpus's tokens assigned to each topic of lambda (V x K): sum_w (lambda_kw - eta),
    less what is left of the initial topics in it (`residual`, K), normalised."""
    mass = np.maximum(lam.sum(axis=0) - eta * lam.shape[0] - residual, 0.0)
    total = mass.sum()
    return mass / total if total > 0 else np.full(lam.shape[1], 1.0 / lam.shape[1])


class LazyTopics:
    """lambda (V x K, word-major) with the topic Dirichlet eta; a model class (LDAModel,
    HDPModel) adds its document-level prior.

    The global step (SVI paper eq. 27) moves every entry, lambda <- (1 - rho) lambda + rho eta,
    and adds rho * scale * statistics to the minibatch's rows only. On a large vocabulary the pass
    over all V x K entries cost more than the documents (GCIDE, K=200: half of a minibatch), so
    lambda is kept as scale * store + shift with two scalars: a step multiplies them
    (scale <- (1 - rho) scale, shift <- (1 - rho) shift + rho eta), adds the statistics divided
    by the new scale to the minibatch's rows of the store, and updates the store's column sums by
    what it added. `settle()` folds the two scalars into the store (store <- scale * store +
    shift, one pass; scale 1, shift 0), as does a step whose scale would fall below SETTLE_BELOW
    (rho = 1 among them). Nothing else settles: every read (`lam`, topic rows, column totals,
    E[beta], the model file) leaves the model as it is, so reads never change the arithmetic of
    training; a checkpoint stores the lazy form as it is, so a resumed run continues bit for bit.

    Reading and writing lambda: `lam` is read-only (writes raise), lambda as it is now, valid
    until the next change (copy it to keep it): for a settled model a view of the store, for a
    lazy one a freshly computed array. The store changes in three ways only, which keep its
    column sums valid by construction: update_topics (a step; updates the sums), settle()
    (recomputes them) and `lam = new` (a new lambda; drops them, summed again when next needed).
    A global step that moves every entry reads lambda and assigns the new one. The counters
    `step` and `docs_seen` are the global steps' (inference.schedule.advance).
    """

    @property
    def lam(self):
        """lambda (V x K, lambda_kw at [w, k]), read-only, without changing the model: a view of
        the store when settled, else scale * store + shift computed afresh (as `save` writes it).
        Valid until lambda next changes; to change lambda assign `lam`."""
        out = self._lambda_as_saved()
        if out is self._store:
            out = out.view()
        out.flags.writeable = False
        return out

    @lam.setter
    def lam(self, value):
        """Replace lambda (V x K) by `value`, which becomes the (settled) store."""
        self._store = value
        self._scale, self._shift = 1.0, 0.0
        self._store_sums = None                 # column sums of the store, when known

    def settle(self):
        """Fold the lazy form into the store in place (store <- scale * store + shift, one pass
        that also sums its columns; scale 1, shift 0) and return lambda, read-only: a view of the
        store, for a global step that reads all of it without a copy (to change it, assign
        `lam`). A settled model is left as it is."""
        if self._lazy:
            from ..kernels.topic_matrix import affine_step_summed
            K = self._store.shape[1]
            sums = affine_step_summed(self._store, self._scale, self._shift, np.zeros(0, dtype=np.int64),
                                      0.0, np.zeros((0, K)))
            self._scale, self._shift = 1.0, 0.0
            self._store_sums = sums
        return self.lam

    @property
    def _lazy(self):
        """lambda is not the store itself (a step has scaled or shifted it since it settled)."""
        return self._scale != 1.0 or self._shift != 0.0

    @property
    def n_topics(self):
        return self._store.shape[1]

    @property
    def n_words(self):
        return self._store.shape[0]

    def _sums_of_store(self):
        """Column sums of the store: those kept by the last update_topics or settle(), else (after
        `lam = new`) a pass over V x K (kernels.topic_matrix), then kept."""
        if self._store_sums is None:
            from ..kernels.topic_matrix import column_sums          # imports numba: only when needed
            self._store_sums = column_sums(self._store)
        return self._store_sums

    def column_totals(self):
        """sum_w lambda_kw for each topic k (from the store's kept column sums)."""
        return self._scale * self._sums_of_store() + self.n_words * self._shift

    def update_topics(self, rho, words, scale, word_topic):
        """One global step on lambda, words ascending (SVI paper eq. 27; see the class):
        lambda <- (1 - rho) lambda + rho eta, lambda[words] += scale * word_topic. The caller
        counts the step (schedule.advance)."""
        from ..kernels.topic_matrix import add_rows_summed, affine_step_summed
        keep = 1.0 - rho
        new_scale, new_shift = self._scale * keep, self._shift * keep + rho * self.eta
        if new_scale < SETTLE_BELOW:            # settle and step in one pass over V x K
            sums = affine_step_summed(self._store, new_scale, new_shift, words, scale, word_topic)
            new_scale, new_shift = 1.0, 0.0
        else:
            before = self._sums_of_store()          # (summed before the rows change, if not kept)
            sums = before + add_rows_summed(self._store, words, scale / new_scale, word_topic)
        self._scale, self._shift = new_scale, new_shift
        self._store_sums = sums

    def mean_rows(self, words=None):
        """E[beta] rows lambda[w] / colsum(lambda) for the given words (all when None), V' x K."""
        from ..kernels.topic_matrix import mean_topic_rows
        return mean_topic_rows(self._store, words, self.column_totals(), self._scale, self._shift)

    def exp_elog_beta(self, words=None):
        """exp(E[log beta_kw]) = exp(psi(lambda_kw) - psi(sum_v lambda_kv)) for the given rows."""
        from ..kernels.special import exp_elog_rows
        rows = self._rows(words)
        out = np.empty((rows.shape[0], self.n_topics))
        exp_elog_rows(np.ascontiguousarray(self._store), self.column_totals(), rows, out, self._scale,
                      self._shift)
        return out

    def elog_beta(self, words=None):
        """E[log beta_kw] = psi(lambda_kw) - psi(sum_v lambda_kv) for the given rows (V' x K)."""
        from ..kernels.special import digamma_array    # imports numba: only when needed
        rows = self._rows(words)
        lam = self._store[rows]
        if self._lazy:
            lam = self._scale * lam + self._shift
        return digamma_array(np.ascontiguousarray(lam)) - digamma_array(self.column_totals())[None, :]

    def _rows(self, words):
        rows = np.arange(self.n_words) if words is None else np.asarray(words, dtype=np.int64)
        if rows.shape[0] and (rows.min() < 0 or rows.max() >= self.n_words):
            raise ValueError(f"word ids must be in 0..{self.n_words - 1}")
        return rows

    def expected_beta(self):
        """E[beta_kw] = lambda_kw / sum_v lambda_kv, word-major (V x K), from lambda as `save`
        writes it and its numpy column sums, so the same bits as `topics` and `export` of the
        saved model."""
        lam = self._lambda_as_saved()
        return lam / lam.sum(axis=0)[None, :]

    def _lambda_as_saved(self):
        return self._scale * self._store + self._shift if self._lazy else self._store

    def topics_finite(self):
        """No infinite or NaN entry in lambda (checked through its column sums)."""
        return bool(np.all(np.isfinite(self.column_totals())))

    def token_weights(self):
        """Share of the corpus's tokens assigned to each topic (token_shares)."""
        return token_shares(self.lam, self.eta)

    # ------------------------------------------------------------------ storage
    def _stored_topics(self, meta, others):
        """(metadata, arrays) of a model file: lambda as it is held (the store, and for a lazy
        lambda its column sums and lambda_scale_shift, so that a checkpoint neither settles it nor
        loses a bit of it), then the model's `others` arrays."""
        arrays = {"lambda": self._store, **others}
        if self._lazy:
            meta["lambda_scale_shift"] = [self._scale, self._shift]
            arrays["lambda_store_sums"] = self._sums_of_store()
        return meta, arrays

    def _restore_topics(self, meta, arrays):
        """The lazy form of a model file written by _stored_topics."""
        if "lambda_scale_shift" in meta:
            self._scale, self._shift = (float(x) for x in meta["lambda_scale_shift"])
            self._store_sums = np.asarray(arrays["lambda_store_sums"], dtype=np.float64)
        return self

    def save(self, path):
        """The model file, with lambda itself (a lazy lambda is written settled; the model in
        memory is left as it is)."""
        meta, arrays = self.stored()
        if meta.pop("lambda_scale_shift", None) is not None:
            del arrays["lambda_store_sums"]
            arrays["lambda"] = self._lambda_as_saved()
        store.save(path, meta, arrays, self.vocab)
