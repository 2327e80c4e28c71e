"""`topicscale infer`: topic proportions E[theta] of new documents, streamed to a table (tables.py)."""
import tempfile
from pathlib import Path

from . import registry
from .corpus.shards import Corpus
from .models import load_model
from .tables import table_format, table_writer


def infer_proportions(model_path, inputs, output, fmt=None, progress=False):
    """`topicscale infer`: E[theta] = gamma / sum(gamma) for each document, ids first; the table's
    format by the extension of `output` (.tsv, .csv, .npy, .parquet)."""
    table_format(output)
    model = load_model(model_path)
    if len(inputs) == 1 and (Path(inputs[0]) / "manifest.json").is_file():
        return _infer_corpus(model, Corpus(inputs[0]), output)
    from .corpus.prepare import prepare
    with tempfile.TemporaryDirectory(prefix="topicscale-infer-") as tmp:
        prepare(inputs, Path(tmp) / "corpus", fmt=fmt, vocab=model_path, progress=progress)
        return _infer_corpus(model, Corpus(Path(tmp) / "corpus"), output)


def proportions(model, local, blocks):
    """(block, E[theta] of its documents, D x K) for each CSR block (Rows, the shards' dtypes) in
    turn: `local` on the topics it runs on for `model`, with the model's document prior."""
    topics, prior = registry.local_topics(local, model), model.local_prior()
    for b in blocks:
        yield b, local.fit(b.indptr, b.indices, b.counts, topics, prior).theta


def proportion_blocks(model, corpus):
    """proportions of each CSR block of `corpus`, in row order, by the model's own local step
    (the one it was trained with); memory holds one block."""
    from .evaluate import check_vocabulary
    check_vocabulary(model.vocab, corpus)
    return proportions(model, registry.local_step_for(model), corpus.blocks())


def _infer_corpus(model, corpus, output):
    """Stream E[theta] block by block into the output (memory holds one block)."""
    K = model.n_topics
    ids = corpus.iter_ids()
    with table_writer(output, [f"topic_{k}" for k in range(K)], corpus.n_docs) as write:
        for block, theta in proportion_blocks(model, corpus):
            write([next(ids) for _ in range(block.n_docs)], theta)
    return {"documents": corpus.n_docs, "topics": K}
