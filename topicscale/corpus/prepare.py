"""`topicscale prepare`: convert any supported input into the native sharded corpus.

Raw text takes two streaming passes: the first counts document frequencies (memory grows
with the vocabulary, and by a hash and a position a document to find repeated ids) and the
second encodes; standard input is spooled to a temporary file so that it can be read several
times. A fixed vocabulary (--vocab) encodes text in one pass, dropping and counting unknown
words, tokenised as its corpus was (tokenizer_for). Bag-of-words input is copied document by
document. Empty documents are skipped and counted; document ids travel with every document, and
ids that repeat are counted (a pass more, only when some ids' hashes meet). Held-out documents
are drawn at random (seeded) from the input and written to a second corpus; they are drawn
first (one more pass, counting the documents) so that the vocabulary is built from the training
documents only: held-out documents are encoded with it like new text, unknown words dropped and
counted. Both corpora appear atomically, or not at all.
"""
import array
import collections
import contextlib
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
from tqdm import tqdm

from ..errors import InputError, TopicscaleError
from . import readers
from .shards import Corpus, CorpusWriter, check_corpus_output, is_corpus_folder
from .tokenize import DEFAULT_TOKEN_PATTERN, described, from_description

# recorded in both corpora's manifest stats ("prepare_version"); raised when the same command
# line would write a different corpus. 2: --min-df / --max-df / --max-vocab count training
# documents only (version 1 counted held-out documents too, so they shaped the vocabulary).
PREPARE_VERSION = 2


def tokenizer_for(recorded, stopwords, token_pattern):
    """The tokenizer (tokenize.described) of a prepare: the options given; those not given are
    the defaults, or `recorded`, how the corpus the vocabulary comes from was tokenised
    (load_vocabulary)."""
    mine = described(stopwords, token_pattern or DEFAULT_TOKEN_PATTERN)
    if recorded is None:
        return mine
    return {"token_pattern": token_pattern or recorded["token_pattern"],
            "stopwords": mine["stopwords"] if stopwords is not None else recorded["stopwords"]}


def corpus_tokenizer(manifest):
    """The tokenizer a corpus manifest records (its text sources'), or None."""
    found = [entry["tokenizer"] for entry in manifest.get("source", []) if "tokenizer" in entry]
    return found[0] if found else None


def load_vocabulary(spec):
    """(a vocabulary from a word-per-line file, a corpus folder or a model folder; how that corpus
    was tokenised, or None: a word list, or a corpus prepared before it was recorded). A model's is
    its training corpus's, which fit copies into its settings; the model file is read once."""
    path = Path(spec)
    if (path / "manifest.json").is_file():
        corpus = Corpus(path)
        return corpus.vocab, corpus_tokenizer(corpus.manifest)
    if (path / "model.npz").is_file():
        from ..models import store
        meta, _, vocab = store.load(path)
        return vocab, meta.get("settings", {}).get("tokenizer")
    if path.is_dir():
        raise InputError(path, None, "neither a corpus nor a model folder")
    return readers.read_vocab(str(path)), None


def prune_vocabulary(doc_freq, n_docs, min_df, max_df, max_vocab):
    """Words in at least min_df documents and at most max_df (a fraction) of them, the
    `max_vocab` most frequent first; ties broken alphabetically, so the result is stable."""
    limit = max_df * n_docs
    kept = [(-df, w) for w, df in doc_freq.items() if df >= min_df and df <= limit]
    kept.sort()
    if max_vocab:
        kept = kept[:max_vocab]
    return sorted(w for _, w in kept)


def heldout_rows(n_docs, heldout, seed):
    """Sorted input positions of the held-out documents: `heldout` is a count (>= 1) or a fraction."""
    if not heldout:
        return np.zeros(0, dtype=np.int64)
    n = int(round(heldout * n_docs)) if heldout < 1 else int(heldout)
    if n >= n_docs:
        raise TopicscaleError(f"--heldout {heldout:g} leaves no training documents (input has {n_docs})")
    if n == 0:
        raise TopicscaleError(f"--heldout {heldout:g} holds out no documents (input has {n_docs}); "
                              "give a larger fraction or a number of documents")
    return np.sort(np.random.default_rng([seed, 0x0D0C]).choice(n_docs, size=n, replace=False))


@contextlib.contextmanager
def spooled_stdin(inputs):
    """(the inputs with "-" replaced by a temporary copy of standard input in the temporary folder
    (TMPDIR), so that it can be read twice; that copy's path, or None)."""
    if readers.STDIN not in inputs:
        yield list(inputs), None
        return
    with tempfile.TemporaryDirectory(prefix="topicscale-stdin-") as tmp:
        copy = os.path.join(tmp, "stdin")
        try:
            with open(copy, "wb") as fh:
                shutil.copyfileobj(getattr(sys.stdin, "buffer", sys.stdin), fh)
        except OSError as exc:
            raise in_temporary_folder("copy standard input into", exc) from None
        try:
            yield [copy if p == readers.STDIN else p for p in inputs], copy
        except InputError as exc:
            if exc.path == copy:          # name standard input in messages, not the spool file
                exc.path = "<stdin>"
            raise


def in_temporary_folder(what, exc):
    """A TopicscaleError naming the temporary folder for the OSError `exc` met trying to `what`
    it (e.g. "copy standard input into")."""
    return TopicscaleError(f"cannot {what} the temporary folder {tempfile.gettempdir()}: "
                           f"{exc.strerror or exc} (TMPDIR chooses that folder)")


class _Split:
    """Route documents (by input position) to the training or held-out writer."""

    def __init__(self, output, heldout_output, vocab, held, source, keep_order=False, keep_empty=False,
                 input_ids=False):
        self.train = CorpusWriter(output, vocab, source=source, keep_order=keep_order)
        self.heldout = (CorpusWriter(heldout_output, vocab, source=source, keep_order=keep_order)
                        if len(held) else None)
        self.held = held
        self.keep_empty = keep_empty
        self.empty = 0
        # input_ids: the ids come from the input (not numbered), so may repeat: hashed to find repeats
        self.id_hashes, self.positions = (array.array("q"), array.array("q")) if input_ids else (None, None)

    def is_held(self, position):
        i = np.searchsorted(self.held, position)
        return bool(i < len(self.held) and self.held[i] == position)

    def add(self, position, doc_id, ids, counts, tokens=None):
        if len(ids) == 0:
            self.empty += 1
            if not self.keep_empty:
                return
        (self.heldout if self.is_held(position) else self.train).add(doc_id, ids, counts, tokens)
        if self.id_hashes is not None:
            self.id_hashes.append(hash(doc_id))
            self.positions.append(position)

    def same_hashed_ids(self):
        """Input positions of written documents whose ids hash alike, a list a hash (ascending):
        every repeated id is among them, and so are different ids whose hashes collide."""
        hashes, positions = np.frombuffer(self.id_hashes, np.int64), np.frombuffer(self.positions, np.int64)
        order = np.argsort(hashes, kind="stable")
        ordered = hashes[order]
        bounds = [0, *(np.flatnonzero(ordered[1:] != ordered[:-1]) + 1).tolist(), len(order)]
        return [positions[order[a:b]].tolist() for a, b in zip(bounds[:-1], bounds[1:]) if b - a > 1]

    def close(self, input_name, stats, heldout_stats=None):
        """Write both corpora, each manifest with `stats` (the held-out one's: `heldout_stats`
        when given)."""
        if self.train.n_docs == 0:
            raise InputError(input_name, None,
                             "no documents" if self.keep_empty else "no non-empty training documents")
        for w, its in ((self.train, stats), (self.heldout, heldout_stats or stats)):
            if w is not None:
                w.stats = dict(its, prepare_version=PREPARE_VERSION, **self.empty_count())
        if self.heldout is not None:
            self.heldout.close()
        self.train.close()

    def empty_count(self):
        return {"empty_kept" if self.keep_empty else "skipped_empty": self.empty}

    def abort(self, exc):
        for w in (self.train, self.heldout):
            if w is not None:
                w.abort(exc)


def _encode(tokens, index):
    """(word ids, counts, tokens in reading order as ids with -1 for unknown words, unknown count)."""
    order = np.fromiter((index.get(t, -1) for t in tokens), dtype=np.int32, count=len(tokens))
    known = order[order >= 0]
    u, c = np.unique(known, return_counts=True)
    return u, c.astype(np.int32), order, len(tokens) - known.size


def prepare(inputs, output, fmt=None, vocab=None, heldout=0.0, heldout_output=None, seed=0,
            min_df=2, max_df=0.5, max_vocab=0, stopwords=None, token_pattern=None,
            text_field="text", id_field="id", keep_order=False, keep_empty=False, progress=True):
    """Write the corpus `output` (and `heldout_output`, default OUTPUT-heldout); returns a summary.
    stopwords and token_pattern: None for the defaults ("english", DEFAULT_TOKEN_PATTERN) or,
    with a vocabulary from a corpus or model, how that corpus was tokenised. keep_order: also keep
    each text document's tokens in reading order (shards.py); keep_empty: also write the documents
    left with no word of the vocabulary (infer's rows), counted as "empty_kept" in place of
    "skipped_empty". "tokenizer_unrecorded": the --vocab corpus or model that records no tokenizer
    (a model fitted from a matrix, a corpus prepared before it was recorded) when none was given.
    "stale_heldout": OUTPUT-heldout, left by an earlier prepare, when this one holds none out."""
    inputs = [os.fspath(p) for p in inputs]
    seen = set()
    for name in inputs:
        key = name if name == readers.STDIN else os.path.realpath(name)
        if key in seen:
            raise TopicscaleError(f"{name} is given twice: each input is read once")
        seen.add(key)
    guessed, fmt = fmt is None, readers.inputs_format(inputs, fmt)
    output = Path(output)
    default_heldout = output.with_name(output.name + "-heldout")
    heldout_output = Path(heldout_output) if heldout_output else default_heldout
    if heldout and heldout_output.resolve() == output.resolve():
        raise TopicscaleError(f"the held-out corpus would be written over the training corpus ({output}); "
                              "give --heldout-output another folder")
    for path in (output, heldout_output) if heldout else (output,):     # before reading any input
        check_corpus_output(path)
    bar = tqdm(unit="doc", disable=not progress, leave=False, dynamic_ncols=True)
    source = [{"input": p, "format": fmt} for p in inputs]
    try:
        if fmt in readers.BOW_FORMATS:
            if len(inputs) != 1:
                raise TopicscaleError(f"{fmt} input is one file; got {len(inputs)}")
            if keep_order:
                raise TopicscaleError(f"--keep-order needs text input: {fmt} input is a bag of words "
                                      "and has no word order")
            result = _prepare_bow(inputs[0], fmt, vocab, output, heldout_output, heldout, seed, source, bar,
                                  keep_empty)
        else:
            words, recorded = load_vocabulary(vocab) if vocab else (None, None)
            tokenizing = tokenizer_for(recorded, stopwords, token_pattern)
            tokenizer = from_description(tokenizing)
            source = [dict(entry, tokenizer=tokenizing) for entry in source]
            with spooled_stdin(inputs) as (files, stdin_copy):
                if stdin_copy and guessed and fmt == "text":
                    refuse_json_as_text(stdin_copy, text_field)
                result = _prepare_text(files, stdin_copy, fmt, vocab, words, output, heldout_output, heldout,
                                       seed, source, tokenizer, min_df, max_df, max_vocab, text_field,
                                       id_field, bar, keep_order, keep_empty)
            if vocab and recorded is None and Path(vocab).is_dir() and stopwords is None and token_pattern is None:
                result["tokenizer_unrecorded"] = str(vocab)
    finally:
        bar.close()
    if not heldout and is_corpus_folder(default_heldout):
        result["stale_heldout"] = str(default_heldout)
    return result


def refuse_json_as_text(path, text_field):
    """InputError when the first line of `path` (standard input, whose format cannot be guessed
    from a name) holding anything is a JSON object with the text field: read as text, its keys
    and ids would become words."""
    import json
    for line_no, line in readers.iter_lines(path):
        if line.strip():
            try:
                first = json.loads(line)
            except ValueError:
                return
            if isinstance(first, dict) and text_field in first:
                raise InputError(path, line_no, f"standard input looks like JSON lines (an object with "
                                 f"a {text_field!r} field): give --format jsonl, or --format text to read "
                                 "each line as text")
            return


def _prepare_bow(path, fmt, vocab_spec, output, heldout_output, heldout, seed, source, bar, keep_empty):
    if vocab_spec and Path(vocab_spec).is_dir():
        raise TopicscaleError(f"{path}: {fmt} input holds word ids of its own vocabulary file (prepare's "
                              "--vocab FILE); a fixed vocabulary (--vocab FOLDER, or infer's model) applies "
                              "to text and JSON lines only")
    src = readers.open_bow(path, fmt, vocab_spec)
    vocab = src.vocab or [f"w{i}" for i in range(src.n_words)]
    n_docs = src.n_docs
    if n_docs is None:
        n_docs = sum(1 for _ in readers.iter_lines(path)) if heldout else 0
    split = _Split(output, heldout_output, vocab, heldout_rows(n_docs, heldout, seed), source,
                   keep_empty=keep_empty)
    try:
        for position, (doc_id, ids, counts, _, _) in enumerate(src.documents()):
            split.add(position, doc_id, ids, counts)
            bar.update()
        split.close(path, {})
    except BaseException as exc:
        split.abort(exc)
        raise
    return _summary(split, output, heldout_output, len(vocab), dropped=0)


def _prepare_text(files, stdin_copy, fmt, vocab_spec, vocab_words, output, heldout_output, heldout, seed,
                  source, tokenizer, min_df, max_df, max_vocab, text_field, id_field, bar, keep_order,
                  keep_empty):
    """vocab_words: the vocabulary read from vocab_spec (load_vocabulary), or None to build one."""
    docs = lambda: readers.iter_text_documents(files, fmt, text_field, id_field, stdin_copy)
    # the held-out draw comes first: the vocabulary is built from the training documents only
    held = heldout_rows(sum(1 for _ in docs()) if heldout else 0, heldout, seed)
    if vocab_words is not None:
        vocab = vocab_words
    else:
        held_positions = set(held.tolist())
        doc_freq = collections.Counter()
        n_train = 0
        bar.set_description("counting")
        for position, (_, text, _, _) in enumerate(docs()):
            if position not in held_positions:
                doc_freq.update(set(tokenizer(text)))
                n_train += 1
            bar.update()
        if not doc_freq:
            raise InputError(files[0], None, "no training document" if not n_train else
                             f"no word in {n_train} training documents (tokens are what --token-pattern "
                             "matches, less the stop words)")
        vocab = prune_vocabulary(doc_freq, n_train, min_df, max_df, max_vocab)
        if not vocab:
            raise InputError(files[0], None, f"no word passes --min-df {min_df} / --max-df {max_df} "
                             f"in {n_train} training documents")
        bar.reset()
    index = {w: i for i, w in enumerate(vocab)}
    bar.set_description("encoding")
    split = _Split(output, heldout_output, vocab, held, source, keep_order, keep_empty, input_ids=True)
    dropped, heldout_dropped = 0, 0         # out-of-vocabulary tokens of training, held-out documents
    try:
        for position, (doc_id, text, _, _) in enumerate(docs()):
            ids, counts, order, unknown = _encode(tokenizer(text), index)
            if unknown and split.is_held(position):
                heldout_dropped += unknown
            else:
                dropped += unknown
            split.add(position, doc_id, ids, counts, order if keep_order else None)
            bar.update()
        if vocab_spec and split.train.n_docs == 0 and not keep_empty and dropped:
            raise InputError(files[0], None, f"no training document holds a word of the vocabulary of "
                             f"{vocab_spec} (words are matched after the text is lower-cased, tokenised and "
                             "stripped of stop words)")
        repeated = repeated_ids(docs, split.same_hashed_ids())
        split.close(files[0], {"dropped_tokens": dropped,
                               "heldout_dropped_tokens": heldout_dropped}, {"dropped_tokens": heldout_dropped})
    except BaseException as exc:
        split.abort(exc)
        raise
    summary = _summary(split, output, heldout_output, len(vocab), dropped, heldout_dropped)
    summary["repeated_ids"], first = repeated
    if first:
        summary["first_repeated_id"] = first
    return summary


def repeated_ids(docs, groups):
    """(how many written documents repeat an earlier one's id, the first such as "ID at FILE:LINE
    and FILE:LINE" or None). groups: input positions of ids that hash alike (_Split.same_hashed_ids);
    `docs()` reads the input again to see which ids are equal."""
    wanted = {p for group in groups for p in group}
    found = {position: (doc_id, f"{path}:{line}") for position, (doc_id, _, path, line) in enumerate(docs())
             if position in wanted} if wanted else {}
    repeats = []                        # (position, id, where first, where again)
    for group in groups:
        first_at = {}
        for position in group:
            doc_id, where = found[position]
            if doc_id in first_at:
                repeats.append((position, doc_id, first_at[doc_id], where))
            else:
                first_at[doc_id] = where
    if not repeats:
        return 0, None
    _, doc_id, where, again = min(repeats)
    return len(repeats), f"{doc_id!r} at {where} and {again}"


def _summary(split, output, heldout_output, n_words, dropped, heldout_dropped=0):
    """dropped: out-of-vocabulary tokens of the training documents, heldout_dropped: of the held-out
    ones (as each corpus's manifest counts them, which `info` shows)."""
    out = {"output": str(output), "documents": split.train.n_docs, "tokens": split.train.n_tokens,
           "nnz": split.train.nnz, "vocabulary": n_words, **split.empty_count(),
           "dropped_tokens": dropped, "prepare_version": PREPARE_VERSION}
    if split.heldout is not None:
        out.update(heldout_output=str(heldout_output), heldout_documents=split.heldout.n_docs,
                   heldout_tokens=split.heldout.n_tokens, heldout_dropped_tokens=heldout_dropped)
    return out
