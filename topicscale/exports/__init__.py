"""`topicscale export`: a model's topics in the formats other tools read.

    npy.py       K x V row-stochastic E[beta] (.npy), its vocabulary and topic weights (no extra)
    gensim_lda.py  a gensim LdaModel saved by LdaModel.save (pip install topicscale[gensim])
    ldavis.py    pyLDAvis's prepared data: the JSON pyLDAvis.save_json writes (numpy only) and a
                 pyLDAvis PreparedData (pip install topicscale[pyldavis])

The optional packages are imported only by the export that needs them (`require`).
"""
import importlib

from ..errors import TopicscaleError


def require(module, extra, what):
    """Import `module`, or raise a TopicscaleError naming the extra that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise TopicscaleError(f"{what} needs {module.split('.')[0]}: "
                              f"pip install 'topicscale[{extra}]'") from None


def exported_topics(model):
    """The topics an export to another tool carries, in `topics` order: those `topics` lists by
    default (HDP: those carrying 99% of the weight or of the tokens; LDA and CTM: all)."""
    import numpy as np
    return np.asarray(model.display_order(False), dtype=np.int64)


def left_out(model, topics):
    """What an export of `topics` (exported_topics) leaves out of an HDP: its other topics and
    their share of the weight, as one note; none for LDA and CTM, which export all."""
    if len(topics) == model.n_topics:
        return []
    weights = model.topic_weights()
    share = 1.0 - float(weights[topics].sum()) / float(weights.sum())
    return [f"{model.n_topics - len(topics)} HDP topics ({share:.2%} of the weight) outside the "
            f"{len(topics)} that carry 99% of the weight or of the tokens"]
