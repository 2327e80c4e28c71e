"""topicscale: stochastic topic models for corpora larger than memory."""

import os as _os

from .openmp import choose_wait_policy as _choose_wait_policy

__version__ = "0.1.0"
_choose_wait_policy(_os.environ)

# imported on first use, so that `import topicscale` imports neither numba nor the extras:
# the scikit-learn estimators (topicscale/estimator.py) and pyldavis_data (exports/ldavis.py)
_ESTIMATORS = ("LDA", "HDP", "CTM")


def __getattr__(name):
    if name in _ESTIMATORS:
        from . import estimator
        return getattr(estimator, name)
    if name == "pyldavis_data":
        from .exports.ldavis import pyldavis_data
        return pyldavis_data
    raise AttributeError(f"module 'topicscale' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_ESTIMATORS) + ["pyldavis_data"])
