"""Model types and loading by the kind recorded in the model file."""
from ..errors import InputError
from . import store
from .ctm import CTMModel       # no numba at import time
from .hdp import HDPModel       # no numba at import time (kernels load lazily)
from .lda import LDAModel

MODEL_TYPES = {"lda": LDAModel, "hdp": HDPModel}
MODEL_TYPES["ctm"] = CTMModel


def load_model(path):
    """Load any topicscale model folder."""
    meta, arrays, vocab = store.load(path)
    kind = meta.get("model")
    if kind not in MODEL_TYPES:
        raise InputError(path, None, f"unknown model type {kind!r}")
    return MODEL_TYPES[kind].from_stored(meta, arrays, vocab)
