"""Native shards, minibatch streams, prepare and the held-out split."""
import json

import numpy as np
import pytest

from topicscale.corpus.prepare import heldout_rows, prepare, prune_vocabulary
from topicscale.corpus import shards
from topicscale.corpus.shards import Corpus, CorpusWriter
from topicscale.corpus.stream import MinibatchStream, StreamPosition
from topicscale.errors import InputError
from topicscale.evaluate import split_block


def small_corpus(path, n_docs=57, n_words=20, shard_docs=10, seed=0):
    rng = np.random.default_rng(seed)
    docs = []
    with CorpusWriter(path, [f"w{i}" for i in range(n_words)], shard_docs=shard_docs) as w:
        for d in range(n_docs):
            ids = np.sort(rng.choice(n_words, size=rng.integers(1, 8), replace=False)).astype(np.int32)
            counts = rng.integers(1, 5, size=ids.shape[0]).astype(np.int32)
            w.add(f"doc{d}", ids, counts)
            docs.append((ids, counts))
    return Corpus(path), docs


def test_shards_round_trip_and_gather_in_any_order(tmp_path):
    corpus, docs = small_corpus(tmp_path / "c")
    assert len(corpus.shards) == 6 and corpus.n_docs == 57
    assert corpus.ids()[:2] == ["doc0", "doc1"]
    rows = [56, 3, 10, 9, 30]
    block = corpus.rows(rows)
    for i, r in enumerate(rows):
        a, b = block.indptr[i], block.indptr[i + 1]
        assert block.indices[a:b].tolist() == docs[r][0].tolist()
        assert block.counts[a:b].tolist() == docs[r][1].tolist()
    assert sum(b.n_docs for b in corpus.blocks(13)) == 57


def test_add_block_writes_the_files_adding_documents_one_by_one_writes(tmp_path):
    """A block is cut at shard boundaries (a document added before it shifts them)."""
    _, docs = small_corpus(tmp_path / "one")
    indptr = np.concatenate([[0], np.cumsum([ids.shape[0] for ids, _ in docs])])
    with CorpusWriter(tmp_path / "block", [f"w{i}" for i in range(20)], shard_docs=10) as w:
        w.add("doc0", docs[0][0], docs[0][1])
        w.add_block([f"doc{d}" for d in range(1, 57)], indptr[1:] - indptr[1],
                    np.concatenate([ids for ids, _ in docs[1:]]), np.concatenate([c for _, c in docs[1:]]))
    files = sorted(p.name for p in (tmp_path / "one").iterdir())
    assert files == sorted(p.name for p in (tmp_path / "block").iterdir()) and len(files) == 6 * 3 + 3
    for name in files:
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "block" / name).read_bytes(), name


def test_read_slices_matches_numpy_slicing(tmp_path):
    """The compiled pread gather against plain slicing: scattered, adjacent (read as one run),
    empty and repeated slices, at a data offset, for int32 and float64; a slice past the end of
    the file is reported by its index."""
    import os
    from topicscale.kernels.gather import read_slices
    rng = np.random.default_rng(1)
    for dtype in (np.int32, np.float64):
        data = rng.integers(-1000, 1000, size=5000).astype(dtype)
        path = tmp_path / f"{np.dtype(dtype).name}.bin"
        path.write_bytes(b"header--" * 3 + data.tobytes())
        starts = np.array([4000, 10, 13, 13, 0, 4990, 17, 2500], dtype=np.int64)
        lengths = np.array([7, 3, 4, 0, 5, 10, 1, 2000], dtype=np.int64)
        out_starts = np.zeros(len(starts), dtype=np.int64)
        np.cumsum(lengths[:-1], out=out_starts[1:])
        out = np.full(lengths.sum(), -7, dtype=dtype)
        fd = os.open(path, os.O_RDONLY)
        try:
            assert read_slices(fd, 24, starts, lengths, out, out_starts) == -1
            expected = np.concatenate([data[a:a + n] for a, n in zip(starts, lengths)])
            assert np.array_equal(out, expected)
            past = np.array([0, 4995], dtype=np.int64), np.array([5, 6], dtype=np.int64)
            assert read_slices(fd, 24, *past, np.empty(11, dtype=dtype), np.array([0, 5])) == 1
            with pytest.raises(IndexError):       # never writes past the output
                read_slices(fd, 24, starts, lengths, out[:-1], out_starts)
        finally:
            os.close(fd)


def test_resident_corpus_gathers_what_the_reads_gather(tmp_path, monkeypatch):
    """A corpus small enough to hold in memory gathers any rows (across shards, repeated,
    empty) exactly as the pread path does."""
    corpus, docs = small_corpus(tmp_path / "c")
    monkeypatch.setattr(shards, "RESIDENT_BYTES", 0)
    read = Corpus(tmp_path / "c")
    assert corpus.resident and not read.resident
    rows = np.random.default_rng(2).integers(0, 57, size=200)
    for want in (rows, rows[:0], [56, 56, 0]):
        a, b = corpus.rows(want), read.rows(want)
        for field in ("rows", "indptr", "indices", "counts"):
            assert np.array_equal(getattr(a, field), getattr(b, field)), field
    assert np.array_equal(corpus.rows([7]).indices, docs[7][0])


def test_shard_cut_short_after_opening_names_the_file(tmp_path, monkeypatch):
    """A shard file truncated after the corpus checked it (another process rewrote it): the
    read fails with the file's name, not with garbage or a crash; so does a resident corpus's
    first read of the shard."""
    monkeypatch.setattr(shards, "RESIDENT_BYTES", 0)
    corpus, _ = small_corpus(tmp_path / "c")
    corpus.rows([25])
    path = tmp_path / "c" / "shard-00002.counts.npy"
    path.write_bytes(path.read_bytes()[:-8])
    with pytest.raises(InputError, match="shard-00002.counts.npy.*shorter than its header"):
        corpus.rows([25, 29])
    monkeypatch.setattr(shards, "RESIDENT_BYTES", 1 << 20)
    resident = Corpus(tmp_path / "c")
    resident.rows([5])
    path = tmp_path / "c" / "shard-00001.indices.npy"
    path.write_bytes(path.read_bytes()[:-8])
    with pytest.raises(InputError, match="shard-00001"):
        resident.rows([15])


def test_writer_error_leaves_nothing(tmp_path):
    with pytest.raises(RuntimeError):
        with CorpusWriter(tmp_path / "c", ["a"]) as w:
            w.add("x", [0], [1])
            raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []


def test_corrupt_shard_is_refused(tmp_path):
    corpus, _ = small_corpus(tmp_path / "c")
    np.save(tmp_path / "c" / "shard-00001.indices.npy", np.full(corpus.shards[1]["nnz"], 99, dtype=np.int32))
    with pytest.raises(InputError, match="word id out of range"):
        Corpus(tmp_path / "c").rows([15])
    with pytest.raises(InputError, match="not a topicscale corpus"):
        Corpus(tmp_path)


def test_stream_visits_every_document_once_per_epoch_and_resumes(tmp_path):
    corpus, _ = small_corpus(tmp_path / "c", n_docs=1000)
    stream = MinibatchStream(corpus, batch_size=64, seed=3, block_docs=50, window_blocks=4)
    batches = []
    for pos, block in stream():
        if pos.epoch == 2:
            break
        batches.append((pos, block.rows.copy()))
    epoch0 = np.concatenate([r for p, r in batches if p.epoch == 0])
    epoch1 = np.concatenate([r for p, r in batches if p.epoch == 1])
    assert sorted(epoch0) == list(range(1000)) and sorted(epoch1) == list(range(1000))
    assert not np.array_equal(epoch0, epoch1)
    assert not np.array_equal(epoch0, np.arange(1000))
    # restarting at a position reproduces the same batches
    pos, rows = batches[20]
    again = next(iter(stream(StreamPosition(pos.epoch, pos.batch))))
    assert again[0] == pos and np.array_equal(again[1].rows, rows)


def test_heldout_split_is_disjoint_seeded_and_covers_the_document(tmp_path):
    corpus, _ = small_corpus(tmp_path / "c")
    block = corpus.rows(np.arange(corpus.n_docs))
    (op, oi, oc), (hp, hi, hc) = split_block(block, seed=5)
    for d in range(block.n_docs):
        words = block.indices[block.indptr[d]:block.indptr[d + 1]]
        obs, ho = oi[op[d]:op[d + 1]], hi[hp[d]:hp[d + 1]]
        assert not set(obs) & set(ho)
        if len(words) >= 2:
            assert sorted(np.concatenate([obs, ho])) == sorted(words)
            assert len(obs) == len(words) // 2
        else:
            assert len(obs) == len(ho) == 0
    # the split depends on the seed and not on how the corpus is cut into blocks
    (op2, oi2, _), _ = split_block(block, seed=6)
    assert not np.array_equal(oi, oi2)
    part = corpus.rows(np.arange(10, 20))
    (pp, pi, _), _ = split_block(part, seed=5)
    assert np.array_equal(pi, oi[op[10]:op[20]])


def test_split_kernel_matches_a_lexsort_reference():
    """kernels/split.observed_entries against numpy: lexsort by (document, key), first half kept;
    ties in the keys (few distinct keys) keep entry order, one-entry documents keep nothing."""
    from topicscale.kernels.split import observed_entries
    rng = np.random.default_rng(3)
    for distinct_keys in (4, 2**63):
        lengths = rng.integers(0, 12, size=300)
        indptr = np.concatenate([[0], np.cumsum(lengths)])
        keys = rng.integers(0, distinct_keys, size=indptr[-1], dtype=np.uint64)
        doc = np.repeat(np.arange(lengths.shape[0]), lengths)
        order = np.lexsort((keys, doc))
        rank = np.empty_like(doc)
        rank[order] = np.arange(doc.shape[0]) - indptr[doc[order]]
        expected = (rank < lengths[doc] // 2) & (lengths[doc] >= 2)
        assert np.array_equal(observed_entries(indptr, keys), expected)


def test_prune_vocabulary():
    df = {"a": 1, "b": 2, "c": 5, "d": 3, "e": 3}
    assert prune_vocabulary(df, 10, min_df=2, max_df=0.4, max_vocab=0) == ["b", "d", "e"]
    assert prune_vocabulary(df, 10, min_df=1, max_df=1.0, max_vocab=2) == ["c", "d"]


def test_heldout_rows():
    assert len(heldout_rows(100, 0.1, 0)) == 10
    assert len(heldout_rows(100, 7, 0)) == 7
    assert np.array_equal(heldout_rows(100, 7, 0), heldout_rows(100, 7, 0))
    assert len(heldout_rows(100, 0, 0)) == 0


def test_prepare_text_with_heldout_and_fixed_vocabulary(tmp_path):
    src = tmp_path / "docs.jsonl"
    lines = [{"id": f"d{i}", "text": "apple banana cherry " * (i % 3 + 1) + ("date " if i % 2 else "")}
             for i in range(40)]
    lines.insert(5, {"id": "empty", "text": "the and of"})        # only stop words: skipped
    src.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    s = prepare([str(src)], tmp_path / "c", heldout=0.25, min_df=1, max_df=1.0, progress=False)
    assert s["skipped_empty"] == 1
    assert s["documents"] + s["heldout_documents"] == 40 and s["heldout_documents"] == 10
    train, held = Corpus(tmp_path / "c"), Corpus(tmp_path / "c-heldout")
    assert train.vocab == ["apple", "banana", "cherry", "date"] == held.vocab
    assert "empty" not in train.ids() + held.ids()
    assert sorted(train.ids() + held.ids()) == sorted(x["id"] for x in lines if x["id"] != "empty")
    # the same text encoded with the corpus's vocabulary, unknown words dropped and counted
    new = tmp_path / "new.txt"
    new.write_text("apple zebra apple\nzebra\n")
    s2 = prepare([str(new)], tmp_path / "n", vocab=str(tmp_path / "c"), progress=False)
    assert s2["documents"] == 1 and s2["skipped_empty"] == 1 and s2["dropped_tokens"] == 2
    n = Corpus(tmp_path / "n")
    block = n.rows([0])
    assert n.ids() == ["1"] and block.indices.tolist() == [0] and block.counts.tolist() == [2.0]


def test_synthetic_corpus_follows_the_topics(tmp_path):
    from topicscale.corpus.synth import synthesize
    beta = np.zeros((2, 6))
    beta[0, :3] = [0.5, 0.3, 0.2]
    beta[1, 3:] = [0.6, 0.2, 0.2]
    vocab = [f"w{i}" for i in range(6)]
    s = synthesize(beta, vocab, tmp_path / "s", 3000, 20.0, alpha=0.01, seed=4)
    c = Corpus(tmp_path / "s")
    assert s["documents"] == c.n_docs == 3000 and c.vocab == vocab
    block = c.rows(np.arange(3000))
    lengths = np.add.reduceat(block.counts, block.indptr[:-1])
    assert abs(lengths.mean() - 20) < 0.5
    # alpha = 0.01: nearly every document draws from one topic, so its words stay on one side
    sides = [set(block.indices[a:b] // 3) for a, b in zip(block.indptr[:-1], block.indptr[1:])]
    assert np.mean([len(x) == 1 for x in sides]) > 0.95
    freq = np.bincount(block.indices, weights=block.counts, minlength=6)
    assert np.allclose(freq[:3] / freq[:3].sum(), beta[0, :3], atol=0.02)
    # a seed gives one corpus
    synthesize(beta, vocab, tmp_path / "t", 3000, 20.0, alpha=0.01, seed=4)
    assert np.array_equal(Corpus(tmp_path / "t").rows(np.arange(3000)).indices, block.indices)



def _split_source(tmp_path, extra):
    """A file of 40 JSON-lines documents "apple banana cherry" plus extra.get(position, "")."""
    lines = [{"id": f"d{i}", "text": "apple banana cherry " + extra.get(i, "")} for i in range(40)]
    src = tmp_path / "docs.jsonl"
    src.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return src


def test_a_word_only_in_heldout_documents_is_not_in_the_vocabulary(tmp_path):
    """The vocabulary comes from the training documents: a word that occurs only in held-out
    documents (here in two, enough for --min-df 2 if they counted) is dropped from them and
    counted; the held-out draw is unchanged, and the manifests record prepare_version 2."""
    held = heldout_rows(40, 0.25, 0).tolist()
    train_pos = [i for i in range(40) if i not in held]
    extra = {held[0]: "zebra zebra", held[1]: "zebra date", train_pos[0]: "date", train_pos[1]: "date"}
    s = prepare([str(_split_source(tmp_path, extra))], tmp_path / "c", heldout=0.25, seed=0, min_df=2,
                max_df=1.0, progress=False)
    train, heldout = Corpus(tmp_path / "c"), Corpus(tmp_path / "c-heldout")
    assert train.vocab == heldout.vocab == ["apple", "banana", "cherry", "date"]
    assert heldout.ids() == [f"d{i}" for i in held]
    assert (s["dropped_tokens"], s["heldout_dropped_tokens"]) == (0, 3)        # each corpus's, as `info`'s
    assert (train.n_tokens, heldout.n_tokens) == (3 * 30 + 2, 3 * 10 + 1)
    assert s["prepare_version"] == 2
    stats = [json.loads((c.path / "manifest.json").read_text())["stats"] for c in (train, heldout)]
    assert [s["prepare_version"] for s in stats] == [2, 2]
    assert (stats[0]["dropped_tokens"], stats[0]["heldout_dropped_tokens"], stats[1]["dropped_tokens"]) == (0, 3, 3)
    assert "heldout_dropped_tokens" not in stats[1]          # each manifest counts its own documents'


def test_document_frequencies_for_pruning_count_training_documents_only(tmp_path):
    """--min-df and --max-df (a fraction of the 30 training documents) see the training
    documents only: 'yak' is in two training documents and one held-out one (3 >= --min-df 3
    only when held-out documents count), 'kiwi' in three training documents and one held-out;
    'plum' in 14 training and 2 held-out documents (16/40 <= --max-df 0.45 < 14/30)."""
    held = heldout_rows(40, 0.25, 0).tolist()
    train_pos = [i for i in range(40) if i not in held]
    extra = {}
    for words, positions in (("yak", train_pos[:2] + held[:1]), ("kiwi", train_pos[2:5] + held[4:5]),
                             ("plum", train_pos[10:24] + held[2:4])):
        for p in positions:
            extra[p] = extra.get(p, "") + " " + words
    src = _split_source(tmp_path, extra)
    # apple, banana and cherry are in every document, above --max-df
    prepare([str(src)], tmp_path / "c", heldout=0.25, seed=0, min_df=3, max_df=0.45, progress=False)
    assert Corpus(tmp_path / "c").vocab == ["kiwi"] == Corpus(tmp_path / "c-heldout").vocab
    prepare([str(src)], tmp_path / "d", heldout=0.25, seed=0, min_df=3, max_df=0.5, progress=False)
    assert Corpus(tmp_path / "d").vocab == ["kiwi", "plum"]
    # without held-out documents every document counts
    prepare([str(src)], tmp_path / "e", min_df=3, max_df=0.45, progress=False)
    assert Corpus(tmp_path / "e").vocab == ["kiwi", "plum", "yak"]


def test_prepare_keep_order_keeps_reading_order_in_both_corpora(tmp_path):
    src = tmp_path / "docs.jsonl"
    texts = [f"cherry apple the banana apple q{chr(97 + i) * 2} cherry" for i in range(12)] + ["the of and"]
    src.write_text("\n".join(json.dumps({"id": f"d{i}", "text": t}) for i, t in enumerate(texts)) + "\n")
    s = prepare([str(src)], tmp_path / "c", heldout=3, min_df=2, max_df=1.0, keep_order=True,
                progress=False)
    assert s["skipped_empty"] == 1
    for path, n in ((tmp_path / "c", 9), (tmp_path / "c-heldout", 3)):
        corpus = Corpus(path)
        assert corpus.keeps_order and corpus.vocab == ["apple", "banana", "cherry"]
        blocks = list(corpus.token_blocks())
        tokens = np.concatenate([t for _, t in blocks])
        # "the" is a stop word (gone), qaa, qbb, ... are in one document each (outside the vocabulary: -1)
        assert tokens.tolist() == [2, 0, 1, 0, -1, 2] * n
        assert sum(p.size - 1 for p, _ in blocks) == n
        # the bag of words is the same as without --keep-order
        assert corpus.rows(np.arange(n)).counts.tolist() == [2.0, 1.0, 2.0] * n
    plain = Corpus(prepare([str(src)], tmp_path / "p", min_df=2, max_df=1.0, progress=False)["output"])
    assert not plain.keeps_order
    with pytest.raises(InputError, match="--keep-order"):
        next(plain.token_blocks())


def test_keep_order_needs_text_input(tmp_path):
    from topicscale.errors import TopicscaleError
    src = tmp_path / "c.ldac"
    src.write_text("2 0:1 1:2\n")
    with pytest.raises(TopicscaleError, match="--keep-order needs text input"):
        prepare([str(src)], tmp_path / "c", keep_order=True, progress=False)
    assert not (tmp_path / "c").exists()
