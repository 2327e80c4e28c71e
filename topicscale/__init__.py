"""topicscale: stochastic topic models for corpora larger than memory."""

__version__ = "0.1.0"

# scikit-learn estimators (topicscale/estimator.py), imported on first use so that
# `import topicscale` imports neither scikit-learn nor numba
_ESTIMATORS = ("LDA", "HDP", "CTM")


def __getattr__(name):
    if name in _ESTIMATORS:
        from . import estimator
        return getattr(estimator, name)
    raise AttributeError(f"module 'topicscale' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_ESTIMATORS))
