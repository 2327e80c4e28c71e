"""Name -> implementation for the CLI's choices and the shared conformance tests.

Entries are import paths, so listing the choices (e.g. for --help) does not import numba.
"""
import importlib

ALGORITHMS = {"svi": "topicscale.inference.svi:SVI",
              "scvb0": "topicscale.inference.scvb0:SCVB0",
              "ssmf-a": "topicscale.inference.ssmf:SSMFA",
              "batch": "topicscale.inference.batch:BatchVB"}
LOCAL_STEPS = {"meanfield": "topicscale.inference.local:MeanField",
               "cvb0": "topicscale.inference.cvb0:CVB0",
               "gibbs": "topicscale.inference.gibbs:Gibbs"}
DEFAULT_LOCAL = {"svi": "meanfield", "scvb0": "cvb0", "ssmf-a": "gibbs", "batch": "meanfield"}


def resolve(table, name):
    module, attr = table[name].split(":")
    return getattr(importlib.import_module(module), attr)
