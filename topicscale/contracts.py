"""What each part of the model x algorithm x local-step matrix provides (registry.MATRIX).

The DESIGN's one idea: a local step fits each document given the topics; a global step folds the
minibatch's statistics into the model with a step size. These Protocols state the methods the
driver loop (train.py), evaluation and the command line call; the fit options each part owns
are declared beside its import path in registry.py. tests/test_contracts.py checks every
registered class against them.
"""
from typing import Protocol


class TopicModel(Protocol):
    kind: str              # the name in registry.MODELS, recorded in the model file
    step: int              # global updates done (t of the step-size schedule)
    docs_seen: int
    settings: dict         # the run's settings that describe the model (runs.new_model)

    @classmethod
    def from_config(cls, vocab, config, rng): ...
    @classmethod
    def from_stored(cls, meta, arrays, vocab): ...
    def stored(self): ...                      # (metadata, arrays) for the model file and checkpoints
    def save(self, path): ...
    def estep_topics(self, words=None): ...    # the topic rows its local steps run on by default
    def local_prior(self): ...                 # the document-level prior they take
    def expected_beta(self): ...               # V x K E[beta]
    def topic_weights(self): ...
    def display_order(self, show_all=True): ...
    def describe(self): ...                    # hyperparameters and state for `info`
    def is_finite(self): ...


class LocalStep(Protocol):
    name: str

    def estep_topics(self, model, words=None): ...
    def fit(self, indptr, indices, counts, topics, prior): ...     # a CSR block -> result with .theta
    def statistics(self, batch, model, topics, seed=None): ...     # a minibatch -> (stats, result)


class GlobalStep(Protocol):
    name: str
    model: TopicModel
    local: LocalStep

    def step(self, batch): ...                 # local step, then the update; returns metrics
