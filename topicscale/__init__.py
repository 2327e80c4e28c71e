"""topicscale: stochastic topic models for corpora larger than memory."""

__version__ = "0.1.0"


def __getattr__(name):
    """Load on first use what needs optional packages, so `import topicscale` stays light."""
    if name == "pyldavis_data":
        from .exports.ldavis import pyldavis_data
        return pyldavis_data
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
