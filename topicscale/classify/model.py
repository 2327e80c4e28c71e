"""A fitted classifier: design, q(theta) per group (or one), hyperparameters; saved as a folder.

CLASSIFIER/classifier.npz is written by topicscale.models.store (atomic replace, format version,
SHA-256 of the arrays), with meta["model"] = "classifier".
"""
from dataclasses import dataclass, field
from pathlib import Path
import time

import numpy as np

from ..errors import InputError, TopicscaleError
from ..models import store
from .data import Design
from .hierarchical import fit_hierarchical
from .logistic import Posterior, fit_posterior, predict_log_proba

KIND = "classifier"
FILENAME = "classifier.npz"


@dataclass
class Classifier:
    design: Design
    method: str
    posteriors: list                 # one Posterior (plain) or one per group (hierarchical)
    groups: list = None              # group names, in the order of `posteriors`; None: plain
    mu0: np.ndarray = None
    sigma0: np.ndarray = None
    settings: dict = field(default_factory=dict)
    summary: dict = field(default_factory=dict)

    @property
    def hierarchical(self):
        return self.groups is not None

    # -------------------------------------------------------------------------------- fit
    @classmethod
    def fit(cls, X, columns, y, groups=None, method="laplace", prior_variance=1.0, intercept="auto",
            standardize=True, phi0=None, phi1=None, nu_extra=None, max_iter=None, tol=1e-6,
            bbvi_options=None):
        start = time.perf_counter()
        design = Design.fit(X, columns, intercept=intercept, standardize=standardize)
        T = design.transform(X)
        y = np.asarray(y, dtype=float)
        p = T.shape[1]
        settings = {"method": method, "prior_variance": prior_variance, "intercept_option": intercept,
                    "standardize": standardize}
        if method == "bbvi":
            settings["bbvi"] = dict(bbvi_options or {})
        if groups is None:
            q = fit_posterior(method, T, y, np.zeros(p), np.eye(p) / prior_variance,
                              bbvi_options=bbvi_options)
            clf = cls(design, method, [q], settings=settings)
            info = {"iterations": q.info.get("iterations")}
        else:
            names = sorted(set(groups))
            index = {g: i for i, g in enumerate(names)}
            gi = np.array([index[g] for g in groups])
            h = fit_hierarchical(T, y, gi, len(names), method=method, prior_variance=prior_variance,
                                 phi0=phi0, phi1=phi1, nu_extra=nu_extra, tol=tol, max_iter=max_iter,
                                 bbvi_options=bbvi_options)
            settings.update(phi0=h.info["phi0"], phi1=h.info["phi1"], nu_extra=h.info["nu_extra"],
                            max_iter=h.info["max_iter"], tol=tol)
            clf = cls(design, method, h.posteriors, names, h.mu0, h.sigma0, settings)
            info = {"em_iterations": h.info["iterations"], "em_converged": h.info["converged"],
                    "group_sizes": {g: int(np.sum(gi == i)) for i, g in enumerate(names)}}
        lp1, lp0 = clf.log_proba(X, groups)
        clf.summary = {"rows": int(T.shape[0]), "n_covariates": int(p), "positives": int(y.sum()),
                       "train_accuracy": float(np.mean((lp1 > lp0) == (y == 1))),
                       "train_log_likelihood": float(np.mean(np.where(y == 1, lp1, lp0))),
                       "seconds": time.perf_counter() - start, **info}
        return clf

    # ---------------------------------------------------------------------------- predict
    def posterior_of(self, group):
        """q(theta) used for a row of `group`: the group's, or N(mu_0, Sigma_0) for a new group."""
        if not self.hierarchical:
            return self.posteriors[0]
        try:
            return self.posteriors[self.groups.index(group)]
        except ValueError:
            return Posterior(self.mu0, self.sigma0, "population")

    def log_proba(self, X, groups=None, approximation="quadrature"):
        """(log p(y=1), log p(y=0)) per row, integrating over q(theta) (logistic.predict_log_proba)."""
        T = self.design.transform(X)
        if not self.hierarchical:
            return predict_log_proba(self.posteriors[0], T, approximation)
        if groups is None:
            raise TopicscaleError("this classifier is hierarchical: give the rows' groups (--groups)")
        lp1, lp0 = np.empty(T.shape[0]), np.empty(T.shape[0])
        groups = np.asarray(groups, dtype=object)
        for g in np.unique(groups):
            rows = np.flatnonzero(groups == g)
            lp1[rows], lp0[rows] = predict_log_proba(self.posterior_of(g), T[rows], approximation)
        return lp1, lp0

    def proba(self, X, groups=None, approximation="quadrature"):
        return np.exp(self.log_proba(X, groups, approximation)[0])

    # ---------------------------------------------------------------------------- storage
    def save(self, path):
        arrays = {"means": np.array([q.mean for q in self.posteriors]),
                  "covs": np.array([q.cov for q in self.posteriors]), **self.design.to_arrays()}
        if self.hierarchical:
            arrays.update(mu0=self.mu0, sigma0=self.sigma0)
        meta = {"model": KIND, "method": self.method, "design": self.design.to_meta(),
                "groups": self.groups, "settings": self.settings, "summary": self.summary}
        store.save(path, meta, arrays, self.design.names, filename=FILENAME)

    @classmethod
    def load(cls, path):
        if not (Path(path) / FILENAME).is_file():
            raise InputError(path, None, f"not a topicscale classifier (no {FILENAME}); "
                             "fit one with `topicscale classify fit`")
        meta, arrays, _ = store.load(path, filename=FILENAME)
        if meta.get("model") != KIND:
            raise InputError(Path(path) / FILENAME, None, "not a topicscale classifier file")
        try:
            design = Design.from_stored(meta["design"], arrays)
            posteriors = [Posterior(m, c, meta["method"]) for m, c in zip(arrays["means"], arrays["covs"])]
            groups = meta.get("groups")
            clf = cls(design, meta["method"], posteriors, groups, arrays.get("mu0"), arrays.get("sigma0"),
                      meta.get("settings", {}), meta.get("summary", {}))
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(Path(path) / FILENAME, None, f"incomplete classifier file ({exc})") from None
        return clf

    def describe(self):
        out = {"method": self.method, "hierarchical": self.hierarchical,
               "covariates": self.design.names, "intercept": self.design.intercept,
               "simplex_features": self.design.simplex, **self.settings, **self.summary}
        if self.hierarchical:
            out["groups"] = self.groups
        return out

