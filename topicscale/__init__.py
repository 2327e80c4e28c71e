"""topicscale: stochastic topic models for corpora larger than memory."""

__version__ = "0.1.0"
