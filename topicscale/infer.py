"""`topicscale infer`: topic proportions E[theta] of new documents, streamed to TSV or .npy."""
import tempfile
from pathlib import Path

import numpy as np

from . import registry
from .atomic import atomic_file
from .corpus.shards import Corpus
from .models import load_model


def infer_proportions(model_path, inputs, output, fmt=None, progress=False):
    """`topicscale infer`: E[theta] = gamma / sum(gamma) for each document, ids first."""
    model = load_model(model_path)
    local = registry.local_step_for(model)
    if len(inputs) == 1 and (Path(inputs[0]) / "manifest.json").is_file():
        return _infer_corpus(model, local, Corpus(inputs[0]), output)
    from .corpus.prepare import prepare
    with tempfile.TemporaryDirectory(prefix="topicscale-infer-") as tmp:
        prepare(inputs, Path(tmp) / "corpus", fmt=fmt, vocab=model_path, progress=progress)
        return _infer_corpus(model, local, Corpus(Path(tmp) / "corpus"), output)


def proportions(model, local, blocks):
    """E[theta] (D x K) of each CSR block (Rows, the shards' dtypes) in turn: `local` on the
    topics it runs on for `model`, with the model's document prior."""
    topics, prior = registry.local_topics(local, model), model.local_prior()
    for b in blocks:
        yield local.fit(b.indptr, b.indices, b.counts, topics, prior).theta


def _infer_corpus(model, local, corpus, output):
    """Stream E[theta] block by block into the output (memory holds one block)."""
    from .evaluate import check_vocabulary
    check_vocabulary(model.vocab, corpus)
    thetas = proportions(model, local, corpus.blocks())
    ids = corpus.iter_ids()
    K = model.n_topics
    if output.endswith(".npy"):
        with atomic_file(output) as fh, atomic_file(output[:-4] + ".ids.txt", "w") as id_fh:
            np.lib.format.write_array_header_2_0(
                fh, {"descr": "<f8", "fortran_order": False, "shape": (corpus.n_docs, K)})
            for theta in thetas:
                fh.write(np.ascontiguousarray(theta, dtype="<f8").tobytes())
                id_fh.writelines(f"{next(ids)}\n" for _ in range(theta.shape[0]))
    else:
        with atomic_file(output, "w") as fh:
            fh.write("id\t" + "\t".join(f"topic_{k}" for k in range(K)) + "\n")
            for theta in thetas:
                for row in theta:
                    fh.write(next(ids) + "\t" + "\t".join(f"{x:.6g}" for x in row) + "\n")
    return {"documents": corpus.n_docs, "topics": K}
