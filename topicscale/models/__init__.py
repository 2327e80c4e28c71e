"""Model types and loading by the kind recorded in the model file."""
from ..errors import InputError
from . import store
from .ctm import CTMModel       # no numba at import time
from .hdp import HDPModel       # no numba at import time (kernels load lazily)
from .lda import LDAModel



def load_model(path):
    """Load any topicscale model folder (its class by the kind it records: registry.MODELS)."""
    from ..registry import MODELS, model_class
    meta, arrays, vocab = store.load(path)
    kind = meta.get("model")
    if kind not in MODELS:
        raise InputError(path, None, f"unknown model type {kind!r}")
    return model_class(kind).from_stored(meta, arrays, vocab)
