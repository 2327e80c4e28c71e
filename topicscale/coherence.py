"""Readable topics: top words, topic coherence in a reference corpus, topic diversity.

Held-out likelihood tracks people's judgement of topics poorly (Chang et al. 2009, "Reading tea
leaves"); how often a topic's top words occur together in a corpus tracks it better. Coherence
follows Röder, Both and Hinneburg (2015, "Exploring the space of topic coherence measures"): a
segmentation of the top words w_1..w_n (largest first), a probability estimate, a confirmation
measure of each segment and the arithmetic mean over segments, exactly as gensim's
CoherenceModel computes them, with epsilon = 1e-12:

    u_mass  one-preceding pairs (w_i, w_j), j < i:  log (P(w_i, w_j) + eps) / P(w_j)
    c_uci   one-one pairs (w_i, w_j), i != j:       PMI = log (P(w_i, w_j) + eps) / (P(w_i) P(w_j))
    c_npmi  one-one pairs:                          NPMI = PMI / -log (P(w_i, w_j) + eps)
    c_v     one-set (w_i against the topic W):      cosine of v(w_i) and v(W), where
            v(w_i)_j = NPMI(w_i, w_j) and v(W) = sum_i v(w_i), j over the topic (gamma = 1)

P is the share of reference documents, or of sliding windows, that contain the words. u_mass
counts documents, as gensim computes it from a bag-of-words corpus. c_uci, c_npmi and c_v count
what gensim counts given `texts`: on a corpus prepared with --keep-order, sliding windows of
10 tokens (c_uci, c_npmi) or 110 (c_v) by default, and otherwise each document as one window
(its distinct words with a window longer than any document: boolean documents). A word is in a
window when any of its tokens is; gensim's accumulator (4.4) instead marks a word absent when
the token leaving the window is that word, even if the word occurs again inside the window, so
it counts fewer windows for a word repeated less than a window apart in a document longer than
the window: there the two differ. Top words are matched to the
reference's vocabulary by string. A top word that occurs in no reference document is dropped
from its topic (the topic keeps its other words, it is not refilled), as gensim's
CoherenceModel drops a word its dictionary, built from the reference, lacks. A topic left with
fewer than two words has no score (None) and is left out of the mean.

The counts come from one streamed pass over the reference for each window length
(kernels/cooccur.py): frequencies of the union of all topics' top words and of the pairs
within a topic only, never the corpus whole.

Diversity (Dieng, Ruiz and Blei 2020, "Topic modeling in embedding spaces") is the share of
distinct words among the top 25 words of all topics: 1 when no two topics share a top word,
1/K when all K topics have the same ones. A topic is repeated when it shares more than half of
its top 10 words with another topic: with too many topics for a corpus, variational inference
leaves the surplus near-empty, each a blur of the corpus's most frequent words, so they repeat
one another. Both need only lambda, so `info` shows them.

This module imports numpy only; scipy and the kernel when they are needed.
"""
import json
from pathlib import Path

import numpy as np

from .errors import TopicscaleError
from .models.store import SCORES_FILE

MEASURES = ("u_mass", "c_npmi", "c_uci", "c_v")
GENSIM_WINDOWS = {"c_npmi": 10, "c_uci": 10, "c_v": 110}
EPSILON = 1e-12
DIVERSITY_WORDS = 25
REPEAT_WORDS = 10
MANY_REPEATS = 0.1      # share of the listed topics repeating another that fit warns of, the
                        # polish rules out (LDA) and the merges join whatever they score (HDP)


# ------------------------------------------------------------------------------ top words
def largest_per_column(matrix, n, block_rows=4096, scale=None):
    """Row indices (min(n, V) x K) of the n largest entries of each column of a row-major V x K matrix
    (of matrix x scale[:, None] when a per-row `scale` is given, never formed whole).

    Partitions blocks of rows (cache-sized, in row order), then partitions the candidates: no
    transposed copy of the matrix, which for V = 92k, K = 200 took longer than reading it."""
    V = matrix.shape[0]
    if n >= V:
        return np.broadcast_to(np.arange(V)[:, None], matrix.shape)
    candidates = []
    for start in range(0, V, block_rows):
        block = matrix[start:start + block_rows]
        if scale is not None:
            block = block * scale[start:start + block_rows, None]
        if block.shape[0] > n:
            candidates.append(start + np.argpartition(block, block.shape[0] - n, axis=0)[-n:])
        else:
            candidates.append(start + np.broadcast_to(np.arange(block.shape[0])[:, None], block.shape))
    candidates = np.concatenate(candidates)
    values = np.take_along_axis(matrix, candidates, axis=0)
    if scale is not None:
        values = values * scale[candidates]
    best = np.argpartition(values, values.shape[0] - n, axis=0)[-n:]
    return np.take_along_axis(candidates, best, axis=0)


def relevance_factors(shares, relevance):
    """Per-word factors s (V) that turn the ranking of a topic's word probabilities phi_kw (or of
    any multiple of them) into Sievert and Shirley's relevance (2014, "LDAvis: a method for
    visualizing and interpreting topics"), p_w being each word's share of the corpus (`shares`):

        r(w, k) = relevance log phi_kw + (1 - relevance) log(phi_kw / p_w)
                = log phi_kw - (1 - relevance) log p_w,

    which within a topic orders the words as phi_kw s_w with s_w = p_w^-(1 - relevance); 0 for a
    word of share 0. Below 1, words frequent in every topic give way to those that set the topic
    apart. None at relevance 1: ranked by probability."""
    if relevance >= 1.0:
        return None
    shares = np.asarray(shares, dtype=np.float64)
    scale = np.zeros(shares.shape[0])
    seen = shares > 0
    scale[seen] = shares[seen] ** -(1.0 - relevance)
    return scale


def relevance_scale(model, relevance):
    """relevance_factors of a model's words, p_w its own share of lam, sum_k lam_wk / sum lam (the
    smoothed counts its E[beta] comes from; no corpus is read). A word it saw no token of has
    p_w = K eta / sum lam, so its phi_kw / p_w stays near 1 and it never tops a topic."""
    if relevance >= 1.0:
        return None
    totals = np.asarray(model.lam).sum(axis=1, dtype=np.float64)
    return relevance_factors(totals / totals.sum(), relevance)


def top_words(lam, n, topics, scale=None):
    """[(word ids, E[beta] of them)] of each topic in `topics`, largest first (by lam x scale when
    relevance factors are given: relevance_scale), ties by word id.

    Every model's E[beta] is lam / colsum(lam): the columns of lam are ranked and only the
    words returned are divided, not the whole V x K matrix."""
    column_sums = lam.sum(axis=0)
    largest = largest_per_column(lam, min(n, lam.shape[0]), scale=scale)
    out = []
    for k in topics:
        top = largest[:, k]
        row = lam[top, k] / column_sums[k]
        order = np.lexsort((top, -(row if scale is None else row * scale[top])))
        out.append((top[order], row[order]))
    return out


def listed_top_words(model, n, scale=None, show_all=False):
    """[(topic, word ids, E[beta] of them)]: the n top words (ranked by relevance with a
    relevance_scale) of the topics `topics` lists (every topic with `show_all`), in its order."""
    order = [int(k) for k in model.display_order(show_all)]
    ranked = top_words(model.lam, n, order, scale)
    return [(k, ids, probs) for k, (ids, probs) in zip(order, ranked)]


def shown_topics(model):
    """The topics coherence and diversity are measured on: those `topics` lists (LDA and CTM:
    all; HDP: those carrying 99% of the weight or of the tokens, the others hold almost nothing)."""
    return np.asarray(model.display_order(False), dtype=np.int64)


def topic_diversity(lam, topics, n=DIVERSITY_WORDS, scale=None):
    """Distinct words among the top n (at most V) of each topic in `topics`, over their number."""
    topics = np.asarray(topics, dtype=np.int64)
    if topics.size == 0:
        return float("nan")
    top = largest_per_column(lam, min(n, lam.shape[0]), scale=scale)[:, topics]
    return float(np.unique(top).size / top.size)


def model_diversity(model, n=DIVERSITY_WORDS, scale=None):
    return topic_diversity(model.lam, shown_topics(model), n, scale)


def repeated_pairs(lam, topics, n=REPEAT_WORDS, scale=None):
    """The pairs of `topics` that share more than half of their top n words: rows
    (shared, a, b) with a < b indices into lam's columns, most shared first; none when V < 2n,
    where the top n are most of the vocabulary and any two topics share them. The shared counts
    come from the topics that hold each top word (an inverted index), so only pairs that share a
    word are counted; numpy alone, for `topics`' start-up."""
    topics = np.asarray(topics, dtype=np.int64)
    if lam.shape[0] < 2 * n:
        return np.zeros((0, 3), dtype=np.int64)
    T = topics.size
    top = largest_per_column(lam, n, scale=scale)[:, topics]
    words, holders = top.T.ravel(), np.repeat(np.arange(T), n)
    order = np.argsort(words, kind="stable")
    words, holders = words[order], holders[order]
    starts = np.flatnonzero(np.r_[True, words[1:] != words[:-1]])
    sizes = np.diff(np.r_[starts, words.size])
    codes = [np.zeros(0, dtype=np.int64)]
    for start, size in zip(starts[sizes > 1], sizes[sizes > 1]):
        held = holders[start:start + size]                 # ascending: the stable sort kept topic order
        i, j = np.triu_indices(size, 1)
        codes.append(held[i] * T + held[j])
    pair, shared = np.unique(np.concatenate(codes), return_counts=True)
    keep = 2 * shared > n
    a, b = topics[pair[keep] // T], topics[pair[keep] % T]
    rows = np.stack([shared[keep], np.minimum(a, b), np.maximum(a, b)], axis=1).astype(np.int64)
    return rows[np.lexsort((rows[:, 2], rows[:, 1], -rows[:, 0]))]


def repeated_topics(lam, topics, n=REPEAT_WORDS, scale=None):
    """How many of `topics` share more than half of their top n words with another of them."""
    return int(np.unique(repeated_pairs(lam, topics, n, scale)[:, 1:]).size)


def listed_repeats(model, n=REPEAT_WORDS, scale=None):
    """(how many of the listed topics (shown_topics) repeat another, how many are listed)."""
    listed = shown_topics(model)
    return repeated_topics(model.lam, listed, n, scale), listed.size


def model_repeats(model, n=REPEAT_WORDS, scale=None):
    return listed_repeats(model, n, scale)[0]


def many_repeat(repeated, listed):
    """True when `repeated` of `listed` topics are MANY_REPEATS of them or more."""
    return repeated >= MANY_REPEATS * listed


def repeats_by_topic(model, n=REPEAT_WORDS, scale=None):
    """{topic: the listed topics it repeats, ascending} for each listed topic (shown_topics)."""
    listed = shown_topics(model)
    repeats = {int(k): [] for k in listed}
    for _, a, b in repeated_pairs(model.lam, listed, n, scale).tolist():
        repeats[a].append(b)
        repeats[b].append(a)
    return {k: sorted(v) for k, v in repeats.items()}


# ------------------------------------------------------------------------------ counting
def parse_measures(text):
    """'u_mass,c_v' -> ['u_mass', 'c_v'] (order kept, repeats dropped); unknown names refused."""
    names = [s.strip() for s in text.split(",") if s.strip()]
    bad = [s for s in names if s not in MEASURES]
    if bad or not names:
        raise TopicscaleError(f"--coherence: unknown measure {', '.join(map(repr, bad)) or '(none given)'}; "
                              f"choose from {','.join(MEASURES)}")
    return list(dict.fromkeys(names))


def _topic_pairs(topic_ids, n_words):
    """The union of the topics' word ids, their pairs within a topic, and the lookup from a
    vocabulary id to its place in the union (-1: in no topic)."""
    union = np.unique(np.concatenate([np.asarray(t, dtype=np.int64) for t in topic_ids] or
                                     [np.zeros(0, np.int64)]))
    place = {int(w): a for a, w in enumerate(union)}
    pairs = {}
    for ids in topic_ids:
        members = sorted({place[int(w)] for w in ids})
        for i, a in enumerate(members):
            for b in members[i + 1:]:
                pairs.setdefault((a, b), len(pairs))
    lookup = np.full(n_words, -1, dtype=np.int64)
    lookup[union] = np.arange(union.size)
    return union, pairs, lookup


def _as_dicts(union, pairs, df, pair_df):
    return ({int(w): int(df[a]) for a, w in enumerate(union)},
            {(int(union[a]), int(union[b])): int(pair_df[s]) for (a, b), s in pairs.items()})


def count_documents(reference, topic_ids, block_docs=10_000):
    """Document frequencies in `reference` (a Corpus) of the words in `topic_ids` (lists of
    reference word ids) and of every pair of words within one topic, in one streamed pass.

    Returns (n_docs, df: {word id: count}, pair_df: {(id, id) ascending: count})."""
    from .kernels.cooccur import count_documents as kernel       # imports numba: only here
    union, pairs, lookup = _topic_pairs(topic_ids, reference.n_words)
    ptr, partner, slot = _partners(pairs, union.size, both=False)
    mark, present, df = (np.zeros(union.size, dtype=np.int64) for _ in range(3))
    pair_df = np.zeros(len(pairs), dtype=np.int64)
    first = 0
    for block in reference.blocks(block_docs):
        kernel(block.indptr, block.indices, lookup, ptr, partner, slot, first, mark, present, df, pair_df)
        first += block.n_docs
    return (reference.n_docs, *_as_dicts(union, pairs, df, pair_df))


def count_windows(reference, topic_ids, window):
    """As count_documents, over the sliding windows of `window` tokens of a --keep-order
    corpus (gensim's boolean sliding window). Returns (windows, df, pair_df)."""
    from .kernels.cooccur import count_windows as kernel
    union, pairs, lookup = _topic_pairs(topic_ids, reference.n_words)
    ptr, partner, slot = _partners(pairs, union.size, both=True)
    count, start, df = (np.zeros(union.size, dtype=np.int64) for _ in range(3))
    pair_start, pair_df = np.zeros(len(pairs), dtype=np.int64), np.zeros(len(pairs), dtype=np.int64)
    windows = 0
    for tokptr, tokens in reference.token_blocks():
        windows += kernel(tokptr, tokens, lookup, ptr, partner, slot, window, count, start, pair_start,
                          df, pair_df)
    return (windows, *_as_dicts(union, pairs, df, pair_df))


def _partners(pairs, n, both):
    """CSR lists of each word's partners in `pairs` ({(a, b), a < b: slot}): those b > a, or
    with both=True every partner, and the slot of each pair."""
    entries = [(a, b, s) for (a, b), s in pairs.items()]
    if both:
        entries += [(b, a, s) for a, b, s in entries]
    entries.sort()
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.add.at(ptr, np.array([a + 1 for a, _, _ in entries], dtype=np.int64), 1)
    np.cumsum(ptr, out=ptr)
    return (ptr, np.array([b for _, b, _ in entries], dtype=np.int64),
            np.array([s for _, _, s in entries], dtype=np.int64))


# ------------------------------------------------------------------------------ measures
def _scores(co, n_docs, measure):
    """One topic's score from its m x m matrix of document frequencies (diagonal: each word's
    own), rows and columns in top-word order, m >= 2; float operations in gensim's order."""
    N = float(n_docs)
    m = co.shape[0]
    p = np.diag(co) / N
    joint = co / N + EPSILON
    if measure == "u_mass":
        i, j = np.tril_indices(m, -1)                   # (w_i, w_j) with j < i, by i then j
        return float(np.mean(np.log(joint[i, j] / p[j])))
    pmi = np.log(joint / np.multiply.outer(p, p))
    npmi = pmi / -np.log(joint)
    if measure in ("c_uci", "c_npmi"):
        off = ~np.eye(m, dtype=bool)                    # (w_i, w_j), i != j, by i then j
        return float(np.mean((pmi if measure == "c_uci" else npmi)[off]))
    whole = np.zeros(m)                                 # c_v: v(W) = sum_i v(w_i), in order
    for i in range(m):
        whole += npmi[i]
    sims = (npmi @ whole) / (np.sqrt(np.sum(npmi ** 2, axis=1)) * np.sqrt(np.sum(whole ** 2)))
    return float(np.mean(sims))


def measure_windows(measures, reference, window=None):
    """{measure: window}: 0 for boolean documents, else the sliding window's length in tokens.

    u_mass always counts documents. The others take `window` when given, else gensim's default
    (c_v 110, c_uci and c_npmi 10) on a corpus that keeps token order, documents otherwise."""
    if window and not reference.keeps_order:
        raise TopicscaleError(f"--window {window}: the reference {reference.path} keeps no token order; "
                              "prepare it with --keep-order")
    out = {}
    for name in measures:
        if name == "u_mass":
            out[name] = 0
        elif window is not None:
            out[name] = window
        else:
            out[name] = GENSIM_WINDOWS[name] if reference.keeps_order else 0
    return out


def coherence(word_lists, reference, measures, window=None, block_docs=10_000):
    """Coherence of each topic (a list of top words, largest first) in `reference` (a Corpus).

    Returns ({measure: [score or None per topic]}, {measure: window}, [top words absent from
    the reference])."""
    index = {w: i for i, w in enumerate(reference.vocab)}
    topic_ids = [[index[w] for w in words if w in index] for words in word_lists]
    windows = measure_windows(measures, reference, window)
    counts = {w: count_windows(reference, topic_ids, w) if w else count_documents(reference, topic_ids, block_docs)
              for w in sorted(set(windows.values()))}             # window -> (N, df, pair_df)
    df = next(iter(counts.values()))[1]          # a word is in some window iff in some document
    kept = [[w for w in ids if df[w] > 0] for ids in topic_ids]
    absent = list(dict.fromkeys(w for words in word_lists for w in words
                                if w not in index or df.get(index[w], 0) == 0))
    scores = {name: [] for name in measures}
    for name in measures:
        n, df, pair_df = counts[windows[name]]
        for ids in kept:
            m = len(ids)
            co = np.empty((m, m))
            for i, a in enumerate(ids):
                for j, b in enumerate(ids):
                    co[i, j] = df[a] if a == b else pair_df[(a, b) if a < b else (b, a)]
            scores[name].append(_scores(co, n, name) if m >= 2 else None)
    return scores, windows, absent


def mean_of(values):
    """The mean over the scored topics (None when none is)."""
    scored = [v for v in values if v is not None]
    return float(np.mean(scored)) if scored else None


def evaluate_coherence(model, reference, measures, top_n=10, window=None, relevance=1.0):
    """`eval --coherence`: {"coherence": {measure: {"mean", "per_topic", "window"}}, "top_n",
    "relevance", "reference", "topics" (the topic numbers per_topic follows), "diversity",
    "repeated_topics", "absent_words"}, all of the top words as ranked by `relevance`
    (relevance_scale); window 0 means boolean documents."""
    topics = shown_topics(model)
    scale = relevance_scale(model, relevance)
    word_lists = [[model.vocab[i] for i in ids] for ids, _ in top_words(model.lam, top_n, topics, scale)]
    scores, windows, absent = coherence(word_lists, reference, measures, window)
    return {"coherence": {name: {"mean": mean_of(v), "per_topic": v, "window": windows[name]}
                          for name, v in scores.items()},
            "top_n": top_n, "relevance": relevance, "reference": str(Path(reference.path).resolve()),
            "topics": [int(k) for k in topics],
            "diversity": topic_diversity(model.lam, topics, scale=scale),
            "repeated_topics": repeated_topics(model.lam, topics, scale=scale), "absent_words": absent}


# ------------------------------------------------------------------------------ the saved file
def _model_state(model):
    return {"step": int(model.step), "docs_seen": int(model.docs_seen)}


def save_result(model_path, model, result):
    """Write MODEL/coherence.json atomically. Measures saved earlier for the same model state,
    top_n, reference and topics are kept beside the new ones."""
    from .atomic import atomic_file
    path = Path(model_path) / SCORES_FILE
    record = dict(result, model=_model_state(model))
    old = _read(path)
    if old and all(old.get(k) == record[k] for k in ("model", "top_n", "reference", "topics")) \
            and _relevance(old) == _relevance(record):
        record["coherence"] = {**old.get("coherence", {}), **record["coherence"]}
    with atomic_file(path, "w") as fh:
        json.dump(record, fh)
    return path


def _read(path):
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _relevance(record):
    return record.get("relevance", 1.0)     # a record older than the option ranked by probability


def saved_record(model_path, model, relevance=1.0):
    """MODEL/coherence.json's record, or None when there is none, it was computed for another
    state of the model (it is then stale) or of other words (another `relevance`)."""
    record = _read(Path(model_path) / SCORES_FILE)
    fits = (isinstance(record, dict) and record.get("model") == _model_state(model)
            and _relevance(record) == relevance)
    return record if fits else None


def record_windows(record):
    """{measure: where its co-occurrences were counted, in words} for the measures of a
    saved_record that say so: the measures count in different windows (measure_windows), and
    scores saved by separate runs of `eval --coherence` may have been given different --window."""
    results = (record or {}).get("coherence")
    if not isinstance(results, dict):
        return {}
    return {name: "documents" if result["window"] == 0 else f"windows of {result['window']} tokens"
            for name, result in results.items()
            if isinstance(result, dict) and isinstance(result.get("window"), int)}


def saved_scores(model_path, model, relevance=1.0):
    """{topic: {measure: score}} from MODEL/coherence.json, or {} when there is none or it is
    stale (saved_record)."""
    return record_scores(saved_record(model_path, model, relevance))


def record_scores(record):
    """{topic: {measure: score}} of a saved_record, or {} for None or a malformed one."""
    if record is None:
        return {}
    try:
        out = {int(k): {} for k in record["topics"]}
        for name, result in record["coherence"].items():
            for k, v in zip(record["topics"], result["per_topic"]):
                out[int(k)][name] = v
    except (KeyError, TypeError, ValueError):
        return {}
    return out
