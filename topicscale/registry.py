"""Name -> implementation for the CLI's choices and the shared conformance tests.

Entries are import paths, so listing the choices (e.g. for --help) does not import numba.
"""
import importlib

ALGORITHMS = {"svi": "topicscale.inference.svi:SVI"}
LOCAL_STEPS = {"meanfield": "topicscale.inference.local:MeanField"}
DEFAULT_LOCAL = {"svi": "meanfield"}


def resolve(table, name):
    module, attr = table[name].split(":")
    return getattr(importlib.import_module(module), attr)
