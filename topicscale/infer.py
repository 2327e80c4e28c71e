"""`topicscale infer`: topic proportions E[theta] of new documents, streamed to a table (tables.py)."""
import itertools
import os
import tempfile
from pathlib import Path

import numpy as np

from . import registry
from .corpus.shards import Corpus, is_url, open_corpus
from .errors import TopicscaleError
from .models import load_model
from .tables import table_files, table_writer


def infer_proportions(model_path, inputs, output, fmt=None, progress=False, executor=None,
                      shared_files=True, as_json=False, fields=None):
    """`topicscale infer`: E[theta] = gamma / sum(gamma) for each document, ids first; the table's
    format by the extension of `output` (.tsv, .csv, .npy, .parquet; "-": standard output, TSV or,
    as_json, a JSON object a document {"id", "theta"}: tables.table_writer). executor: where the blocks
    are read and fitted (distributed.Executor; default this process); shared_files=False (a
    remote cluster) refuses raw INPUTS, whose prepared corpus would be a temporary folder here.
    Raw INPUTS give a row for every document: one with none of the model's words gets the local
    step's proportions for no words (the prior's), as LDA.transform gives an empty row.
    fields: JSON lines INPUTS' text_field and id_field (None: prepare's default); refused with
    other inputs."""
    from .atomic import check_not_owned
    from .corpus.readers import inputs_format
    check_not_owned(*table_files(output))
    model = load_model(model_path)
    fields = {k: v for k, v in (fields or {}).items() if v is not None}
    corpus = len(inputs) == 1 and (is_url(inputs[0]) or (Path(inputs[0]) / "manifest.json").is_file())
    if fields and (corpus or inputs_format(inputs, fmt) != "jsonl"):
        given = " and ".join("--" + k.replace("_", "-") for k in fields)
        hint = " (standard input needs --format jsonl)" if "-" in inputs and fmt is None else ""
        raise TopicscaleError(f"{given} {'name fields' if len(fields) > 1 else 'names a field'} of JSON lines "
                              f"INPUTS, which these are not{hint}")
    if corpus:
        if fmt is not None:
            raise TopicscaleError(f"--format {fmt} is the format of raw INPUTS; {inputs[0]} is a "
                                  "prepared corpus, which needs none")
        return _infer_corpus(model, open_corpus(inputs[0]), output, executor, as_json)
    if not shared_files:
        raise TopicscaleError("with --scheduler, infer reads a prepared corpus every worker can read "
                              "(`topicscale prepare` it to a shared folder or an fsspec URL first), "
                              "not raw INPUTS")
    from .corpus.prepare import in_temporary_folder, prepare
    with tempfile.TemporaryDirectory(prefix="topicscale-infer-") as tmp:
        try:
            prepared = prepare(inputs, Path(tmp) / "corpus", fmt=fmt, vocab=model_path, keep_empty=True,
                               progress=progress, **fields)
        except OSError as exc:
            if exc.filename and not str(exc.filename).startswith(tmp):
                raise
            raise in_temporary_folder("encode the documents in", exc) from None
        summary = _infer_corpus(model, Corpus(Path(tmp) / "corpus"), output, executor, as_json)
        return dict(summary, without_model_words=prepared["empty_kept"],
                    tokenizer_unrecorded=prepared.get("tokenizer_unrecorded"))


def theta_block(block, local, rows, prior):
    """E[theta] (D x K) of a CSR block (Rows) by `local` on `rows`, the topic rows of the block's
    distinct words (ascending): what each block of `infer` computes, here or on a worker."""
    words = np.unique(block.indices)
    local_ids = np.searchsorted(words, block.indices).astype(np.int32)
    return _theta(local, block, local_ids, rows, prior)


def proportions(model, local, blocks):
    """(block, E[theta] of its documents, D x K) for each CSR block (Rows, the shards' dtypes) in
    turn: `local` on the topics it runs on for `model`, with the model's document prior."""
    topics, prior = registry.local_topics(local, model), model.local_prior()
    for b in blocks:
        yield b, _theta(local, b, b.indices, topics, prior)


def _theta(local, block, indices, topics, prior):
    """E[theta] of the block's documents, `indices` its word ids as rows of `topics`; a sampler
    (local.keyed) is seeded by each document's words and counts, not its place in the input."""
    from .inference.local_steps.entries import content_keys
    keys = ({"keys": content_keys(block.indptr, block.indices, block.counts)}
            if getattr(local, "keyed", False) else {})
    return local.fit(block.indptr, indices, block.counts, topics, prior, **keys).theta


def proportion_blocks(model, corpus):
    """proportions of each CSR block of `corpus`, in row order, by the model's own local step
    (the one it was trained with); memory holds one block."""
    from .evaluate import check_vocabulary
    check_vocabulary(model.vocab, corpus)
    return proportions(model, registry.local_step_for(model), corpus.blocks())


def _infer_corpus(model, corpus, output, executor=None, as_json=False):
    """Stream E[theta] block by block (theta_block, in this process or on the executor's
    workers) into the output, in row order (memory holds a few blocks)."""
    from .evaluate import check_vocabulary
    from .inference.chunks import InProcess
    check_vocabulary(model.vocab, corpus)
    K = model.n_topics
    local = registry.local_step_for(model)
    topics, prior = registry.local_topics(local, model), model.local_prior()
    args = lambda words: (local, np.ascontiguousarray(topics[words], dtype=np.float64), prior)
    ids = corpus.iter_ids()
    executor = executor or InProcess(corpus)
    thetas = executor.map_blocks(corpus, corpus.row_blocks(), theta_block, args)
    first = next(thetas, None)          # before the header: a corpus failing at once prints nothing
    with table_writer(output, [f"topic_{k}" for k in range(K)], corpus.n_docs,
                      json_key="theta" if as_json else None) as write:
        for theta in itertools.chain([] if first is None else [first], thetas):
            write([next(ids) for _ in range(theta.shape[0])], theta)
    return {"documents": corpus.n_docs, "topics": K}
