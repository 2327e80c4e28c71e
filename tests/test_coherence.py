"""Topic coherence against gensim's CoherenceModel, its counting kernel, and topic diversity."""
import json
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from clirun import run
from topicscale import coherence as coh
from topicscale.corpus.shards import Corpus, CorpusWriter
from topicscale.models import load_model

# Reference corpus 1: "mango" is in its vocabulary but in no document, "nut" is not in it at all;
# kiwi/fig and kiwi/banana never share a document.
DOCS = [
    "apple banana apple cherry",
    "apple banana date",
    "banana cherry egg",
    "apple cherry cherry fig",
    "date egg fig grape",
    "grape fig egg",
    "apple banana cherry date egg",
    "kiwi lemon",
    "kiwi lemon grape lemon",
    "lemon apple",
]
TOPICS = [
    ["apple", "banana", "cherry", "date"],
    ["egg", "fig", "grape", "kiwi"],
    ["kiwi", "banana", "mango", "lemon", "nut"],
    ["cherry", "apple", "lemon", "grape", "egg"],
]
# Reference corpus 2: "the" is in every document (P = 1); sang, fell, red, mat never meet.
DOCS2 = [
    "the cat sat on the mat",
    "the dog sat on the log",
    "the cat and the dog",
    "the bird sang",
    "the bird and the cat",
    "the log fell",
    "the mat is red",
]
TOPICS2 = [["the", "cat", "dog", "sat"], ["sang", "fell", "red", "mat"], ["the", "bird", "cat"]]

# Computed with gensim 4.4.0 (benchmark virtualenv), per topic, for each corpus above:
#   texts = [sorted(set(doc.split())) for doc in DOCS]; dct = Dictionary(texts)
#   u_mass: CoherenceModel(topics=TOPICS, corpus=[dct.doc2bow(d.split()) for d in DOCS],
#                          dictionary=dct, coherence="u_mass", topn=10).get_coherence_per_topic()
#   others: CoherenceModel(topics=TOPICS, texts=texts, dictionary=dct, coherence=m, topn=10,
#                          window_size=max(len(t) for t in texts) + 1, processes=1)
#           .get_coherence_per_topic()
# (gensim drops "mango" and "nut", which its dictionary built from the texts lacks.)
GENSIM = {
    "u_mass": [-0.7175109322512924, -9.338691742254694, -17.57877119584795, -11.249816548969287],
    "c_npmi": [0.2687694639604473, -0.07566550254621511, -0.36126185749793066, -0.33396866776360645],
    "c_uci": [0.3426208358487533, -7.931986383874677, -16.470692415672602, -10.211999136000664],
    "c_v": [0.7904706211983781, 0.47275572865033916, 0.32904817735778813, 0.16092068822380406],
}
GENSIM2 = {
    "u_mass": [-1.0405325925406286, -21.404259139059864, -0.9310693364765613],
    "c_npmi": [0.07433686391358164, -0.6170217477279264, 0.02640592628260934],
    "c_uci": [0.14465285793671215, -19.804922580284522, 0.051383559946697195],
    "c_v": [0.599818198436792, 0.33176190984988346, 0.6068944793463165],
}


def write_corpus(path, docs, extra_vocab=()):
    """A prepared corpus of whitespace-split documents (vocabulary sorted, plus `extra_vocab`)."""
    vocab = sorted({w for d in docs for w in d.split()} | set(extra_vocab))
    index = {w: i for i, w in enumerate(vocab)}
    with CorpusWriter(path, vocab) as out:
        for n, doc in enumerate(docs):
            ids, counts = np.unique([index[w] for w in doc.split()], return_counts=True)
            out.add(f"d{n}", ids, counts)
    return Corpus(path)


@pytest.fixture
def reference(tmp_path):
    return write_corpus(tmp_path / "ref", DOCS, extra_vocab=["mango"])


@pytest.mark.parametrize("block_docs", [10_000, 3, 1])
def test_coherence_matches_gensim(reference, block_docs):
    scores, _, absent = coh.coherence(TOPICS, reference, coh.MEASURES, block_docs=block_docs)
    for name in coh.MEASURES:
        assert scores[name] == pytest.approx(GENSIM[name], rel=1e-12, abs=1e-12), name
    assert absent == ["mango", "nut"]


def test_coherence_matches_gensim_with_a_word_in_every_document(tmp_path):
    scores, _, absent = coh.coherence(TOPICS2, write_corpus(tmp_path / "ref2", DOCS2), coh.MEASURES,
                                      block_docs=2)
    for name in coh.MEASURES:
        assert scores[name] == pytest.approx(GENSIM2[name], rel=1e-12, abs=1e-12), name
    assert absent == []


def test_pairs_that_never_meet_score_near_the_floor(reference):
    """NPMI of a pair that never shares a document is log(eps / P P') / -log(eps): -1 when the
    words are rare, here about -0.85 (each word in 2 or 3 of 10 documents)."""
    scores, _, _ = coh.coherence([["kiwi", "fig"]], reference, ["c_npmi", "u_mass"])
    p_kiwi, p_fig = 2 / 10, 3 / 10
    expected = np.log(1e-12 / (p_kiwi * p_fig)) / -np.log(1e-12)
    assert scores["c_npmi"] == [pytest.approx(expected, rel=1e-12)]
    assert scores["u_mass"] == [pytest.approx(np.log(1e-12 / p_kiwi), rel=1e-12)]


def test_a_topic_with_fewer_than_two_words_in_the_reference_has_no_score(reference):
    scores, _, absent = coh.coherence([["apple", "mango", "nut"], ["apple", "banana"]], reference,
                                      coh.MEASURES)
    assert all(scores[name][0] is None and scores[name][1] is not None for name in coh.MEASURES)
    assert coh.mean_of(scores["c_v"]) == scores["c_v"][1]
    assert absent == ["mango", "nut"]


def test_count_documents_matches_a_dense_count(tmp_path):
    """The kernel's document frequencies of words and within-topic pairs against X^T X of the
    boolean document-word matrix, on a random corpus streamed in uneven blocks."""
    rng = np.random.default_rng(0)
    V, D = 60, 200
    vocab = [f"w{i}" for i in range(V)]
    X = np.zeros((D, V), dtype=np.int64)
    with CorpusWriter(tmp_path / "c", vocab) as out:
        for d in range(D):
            ids = np.sort(rng.choice(V, size=rng.integers(1, 15), replace=False))
            X[d, ids] = 1
            out.add(f"d{d}", ids, rng.integers(1, 4, size=ids.size))
    topics = [list(rng.choice(V, size=8, replace=False)) for _ in range(6)]
    n_docs, df, pair_df = coh.count_documents(Corpus(tmp_path / "c"), topics, block_docs=37)
    dense = X.T @ X
    assert n_docs == D
    assert df == {w: dense[w, w] for t in topics for w in t}
    expected = {(min(a, b), max(a, b)): dense[a, b] for t in topics for a in t for b in t if a != b}
    assert pair_df == expected


def test_measure_names_are_checked():
    assert coh.parse_measures("c_v, u_mass,c_v") == ["c_v", "u_mass"]
    with pytest.raises(coh.TopicscaleError, match="'c_x'"):
        coh.parse_measures("u_mass,c_x")


# ----------------------------------------------------------------------------- diversity
def test_diversity_exact_on_a_hand_built_lambda():
    """Top 2 of three topics over five words: {0, 1}, {0, 1}, {3, 4}: 4 distinct of 6."""
    lam = np.array([[9.0, 8.0, 0.1],
                    [7.0, 9.0, 0.2],
                    [1.0, 1.0, 0.3],
                    [0.5, 0.5, 5.0],
                    [0.2, 0.1, 6.0]])
    assert coh.topic_diversity(lam, [0, 1, 2], n=2) == pytest.approx(4 / 6)
    assert coh.topic_diversity(lam, [0, 2], n=2) == 1.0
    assert coh.topic_diversity(lam, [0, 1], n=2) == 0.5
    assert coh.topic_diversity(lam, [0, 1, 2], n=25) == pytest.approx(5 / 15)   # n capped at V


def test_topics_that_share_words_are_less_diverse():
    rng = np.random.default_rng(1)
    V, K = 500, 10
    distinct = rng.gamma(0.1, 1.0, size=(V, K))
    for k in range(K):                                   # topic k leads with words 25k..25k+24
        distinct[25 * k:25 * (k + 1), k] += 100.0
    shared = distinct.copy()
    shared[:25, :] += 1000.0                             # every topic leads with words 0..24
    assert coh.topic_diversity(distinct, range(K)) == 1.0
    assert coh.topic_diversity(shared, range(K)) == pytest.approx(0.1)


def _lambda_with_tops(tops, V):
    """V x len(tops) lambda whose column k ranks tops[k]'s words first, in their order."""
    lam = np.full((V, len(tops)), 0.01)
    for k, words in enumerate(tops):
        lam[words, k] = 100.0 - np.arange(len(words))
    return lam


def test_a_topic_sharing_over_half_of_its_top_words_is_repeated():
    base = list(range(10))
    six = [0, 1, 2, 3, 4, 5, 20, 21, 22, 23]             # shares 6 of 10 with base
    five = [0, 1, 2, 3, 4, 20, 21, 22, 23, 24]           # shares exactly half
    other = [6, 7, 8, 9, 10, 25, 26, 27, 28, 29]         # 4 with base, 0 with six
    assert coh.repeated_topics(_lambda_with_tops([base, six, other], 30), [0, 1, 2]) == 2
    assert coh.repeated_topics(_lambda_with_tops([base, five, other], 30), [0, 1, 2]) == 0
    assert coh.repeated_topics(_lambda_with_tops([base, six, other], 30), [1, 2]) == 0   # only those listed
    assert coh.repeated_topics(_lambda_with_tops([base, base, base], 30), [0, 1, 2]) == 3


def test_repeated_topics_agree_with_comparing_every_pair_of_word_sets():
    rng = np.random.default_rng(3)
    V, K, n = 60, 40, 10
    lam = rng.gamma(0.2, 1.0, size=(V, K))
    lam[:, 30:] = lam[:, :10] * rng.gamma(1.0, 1.0, size=(V, 10))     # noisy copies: most repeat
    sets = [set(coh.largest_per_column(lam, n)[:, k]) for k in range(K)]
    expected = sum(any(2 * len(sets[a] & sets[b]) > n for b in range(K) if b != a) for a in range(K))
    assert 10 < expected < 20
    assert coh.repeated_topics(lam, range(K), n) == expected


def slow_relevance_top(lam, relevance, n):
    """Each topic's top n word ids by Sievert and Shirley's relevance, as they define it:
    relevance log phi_kw + (1 - relevance) log(phi_kw / p_w), p_w the word's share of lam. Ties by
    word id."""
    phi = lam / lam.sum(axis=0)
    p = lam.sum(axis=1) / lam.sum()
    out = []
    for k in range(lam.shape[1]):
        score = relevance * np.log(phi[:, k]) + (1 - relevance) * np.log(phi[:, k] / p)
        out.append(sorted(range(lam.shape[0]), key=lambda w: (-score[w], w))[:n])
    return out


@pytest.mark.parametrize("relevance", [1.0, 0.6, 0.2, 0.0])
def test_relevance_ranking_matches_its_definition(relevance):
    rng = np.random.default_rng(3)
    V, K, eta = 300, 6, 0.05
    lam = eta + rng.gamma(0.3, 20.0, size=(V, K))
    lam[:40] += rng.gamma(2.0, 50.0, size=(40, 1))          # words frequent in every topic
    lam[[7, 150]] = eta + rng.uniform(0, 1e-3, size=(2, K))  # words of no token (crumbs of a start)
    model = SimpleNamespace(lam=lam, eta=eta)
    scale = coh.relevance_scale(model, relevance)
    assert (scale is None) == (relevance == 1.0)
    got = [list(ids) for ids, _ in coh.top_words(lam, 12, range(K), scale)]
    assert got == slow_relevance_top(lam, relevance, 12)
    assert not {7, 150} & {w for ids in got for w in ids}
    for k, (ids, probs) in enumerate(coh.top_words(lam, 12, range(K), scale)):   # probabilities, not scores
        assert np.allclose(probs, lam[ids, k] / lam[:, k].sum())
    if scale is not None:
        blocked = coh.largest_per_column(lam, 12, block_rows=7, scale=scale)
        assert np.array_equal(np.sort(blocked, axis=0), np.sort(np.argsort(-lam * scale[:, None], axis=0)[:12], axis=0))


def test_relevance_factors_leave_words_of_no_share_last():
    assert coh.relevance_factors([0.5, 0.0, 0.25], 1.0) is None
    assert coh.relevance_factors([0.5, 0.0, 0.25], 0.5) == pytest.approx([2 ** 0.5, 0.0, 2.0])


def test_relevance_below_one_lets_words_frequent_everywhere_give_way():
    """Three topics that all lead with the corpus's most frequent word: ranked by probability their
    top 2 share it; by relevance 0.6 each leads with its own words."""
    V, eta = 7, 0.01
    lam = np.full((V, 3), eta)
    lam[0] = 100.0                                  # "the" in every topic
    for k in range(3):
        lam[1 + 2 * k:3 + 2 * k, k] = [60.0, 50.0]
    model = SimpleNamespace(lam=lam, eta=eta)
    assert coh.topic_diversity(lam, range(3), n=2) == pytest.approx(4 / 6)
    assert coh.topic_diversity(lam, range(3), n=2, scale=coh.relevance_scale(model, 0.6)) == 1.0
    assert [list(ids) for ids, _ in coh.top_words(lam, 2, range(3), coh.relevance_scale(model, 0.6))] == \
        [[1, 2], [3, 4], [5, 6]]


# ----------------------------------------------------------------------------- command line

@pytest.fixture
def hand_model(tmp_path, reference):
    """An LDA model whose top words (first three) are TOPICS' apple banana cherry, egg fig
    grape and kiwi banana lemon, trained (as its settings say) on the reference corpus."""
    from topicscale.models.lda import LDAModel
    vocab = reference.vocab
    tops = [["apple", "banana", "cherry"], ["egg", "fig", "grape"], ["kiwi", "banana", "lemon"]]
    lam = np.full((len(vocab), 3), 0.01)
    for k, words in enumerate(tops):
        for rank, w in enumerate(words):
            lam[vocab.index(w), k] = 10.0 - rank
    LDAModel(lam, np.full(3, 1 / 3), 0.01, vocab, step=5, docs_seen=50,
             settings={"corpus": str(reference.path)}).save(tmp_path / "model")
    return tmp_path / "model", tops


def test_eval_coherence_json_and_saved_file(hand_model, reference):
    model, tops = hand_model
    out = json.loads(run("eval", model, "--coherence", "c_npmi,u_mass", "--top-n", "3", "--json").stdout)
    assert set(out) >= {"coherence", "top_n", "reference", "diversity", "repeated_topics"}
    assert out["repeated_topics"] == 0      # top 10 of 13 words: most of the vocabulary, not a repeat
    assert out["top_n"] == 3 and out["reference"] == str(reference.path.resolve())
    assert list(out["coherence"]) == ["c_npmi", "u_mass"] and out["topics"] == [0, 1, 2]
    expected, _, _ = coh.coherence(tops, reference, ["c_npmi", "u_mass"])
    for name in ("c_npmi", "u_mass"):
        assert out["coherence"][name]["per_topic"] == pytest.approx(expected[name], rel=1e-12)
        assert out["coherence"][name]["mean"] == pytest.approx(np.mean(expected[name]), rel=1e-12)
    saved = json.loads((model / coh.SCORES_FILE).read_text())
    assert saved["coherence"] == out["coherence"] and saved["model"] == {"step": 5, "docs_seen": 50}
    # a second measure for the same model, words and reference is kept beside the first
    run("eval", model, reference.path, "--coherence", "c_v", "--top-n", "3")
    saved = json.loads((model / coh.SCORES_FILE).read_text())
    assert list(saved["coherence"]) == ["c_npmi", "u_mass", "c_v"]
    rows = json.loads(run("topics", model, "--json").stdout)
    assert isinstance(rows, list) and len(rows) == 3
    for i, row in enumerate(rows):
        assert row["coherence"] == {name: saved["coherence"][name]["per_topic"][i]
                                    for name in ("c_npmi", "u_mass", "c_v")}


def test_eval_coherence_prints_its_scores_when_the_model_folder_is_read_only(hand_model, reference, monkeypatch):
    """A model folder it cannot write in (as root, a chmod does not stop the test's writes, so the
    save fails as atomic_file fails there): the scores are printed, the failure is a warning."""
    from topicscale.errors import TopicscaleError
    model, tops = hand_model

    def refuse(folder, *args):
        raise TopicscaleError(f"{folder}/coherence.json: cannot write in {folder} (Permission denied)")
    monkeypatch.setattr(coh, "save_result", refuse)
    r = run("eval", model, "--coherence", "u_mass", "--top-n", "3", "--json")
    assert json.loads(r.stdout)["coherence"]["u_mass"]["per_topic"] == pytest.approx(
        coh.coherence(tops, reference, ["u_mass"])[0]["u_mass"], rel=1e-12)
    assert "warning: not saved" in r.stderr and "Permission denied" in r.stderr
    assert not (model / coh.SCORES_FILE).exists()


def test_topics_reads_coherence_without_numba(hand_model):
    model, _ = hand_model
    run("eval", model, "--coherence", "c_v", "--top-n", "3")
    code = ("import sys, json; from topicscale.cli import cli; "
            "cli.main(args=['topics', sys.argv[1], '--json'], standalone_mode=False); "
            "cli.main(args=['info', sys.argv[1], '--json'], standalone_mode=False); "
            "assert 'numba' not in sys.modules, 'numba imported'")
    out = subprocess.run([sys.executable, "-c", code, str(model)], check=True, capture_output=True,
                         text=True).stdout.splitlines()
    assert all("c_v" in row["coherence"] for row in json.loads(out[0]))
    # 13 words, fewer than 25: each topic's top words are all 13, so 13 distinct of 3 x 13
    assert json.loads(out[1])["diversity"] == pytest.approx(1 / 3)
    assert json.loads(out[1])["repeated_topics"] == 0        # top 10 of 13: too few words to tell


def test_eval_without_the_training_corpus_says_so(hand_model, reference):
    model, _ = hand_model
    import shutil
    shutil.rmtree(reference.path)
    result = run("eval", model, "--coherence", "u_mass", ok=False)
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "training corpus" in lines[0] and str(reference.path) in lines[0]


def test_eval_refuses_unknown_measures_in_one_line(hand_model):
    model, _ = hand_model
    result = run("eval", model, "--coherence", "u_mass,npmi", ok=False)
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("topicscale: error:") and "'npmi'" in lines[0]
    assert not (model / coh.SCORES_FILE).exists()


def test_eval_without_coherence_still_needs_its_heldout_corpus(hand_model):
    model, _ = hand_model
    result = run("eval", model, ok=False)
    assert result.exit_code == 2 and "HELDOUT" in result.output


def test_eval_refuses_top_n_without_coherence(hand_model, reference):
    """--top-n sets the words --coherence scores; the held-out score ignored it silently."""
    model, _ = hand_model
    result = run("eval", model, reference.path, "--top-n", "5", ok=False)
    assert result.exit_code == 2 and "--top-n goes with --coherence" in result.output
    result = run("eval", model, reference.path, "--top-n", "5", "--window", "0", ok=False)
    assert result.exit_code == 2 and "--top-n and --window go with --coherence" in result.output
    out = json.loads(run("eval", model, "--coherence", "u_mass", "--json").stdout)
    assert out["top_n"] == 10                                           # the default, as before


def test_topics_and_eval_rank_by_relevance(tmp_path, reference):
    """Three topics led by the reference's most frequent word, apple: `topics --relevance 0.6`
    lists each topic's own words first, `eval --coherence --relevance` scores those words, and
    `topics --json` shows the saved scores only for the ranking they were computed on."""
    from topicscale.models.lda import LDAModel
    vocab = reference.vocab
    lam = np.full((len(vocab), 3), 0.01)
    lam[vocab.index("apple")] = 10.0
    own = [["banana", "cherry"], ["egg", "fig"], ["kiwi", "lemon"]]
    for k, words in enumerate(own):
        lam[[vocab.index(w) for w in words], k] = [6.0, 5.0]
    LDAModel(lam, np.full(3, 1 / 3), 0.01, vocab, step=5, docs_seen=50,
             settings={"corpus": str(reference.path)}).save(tmp_path / "m")
    model = tmp_path / "m"
    first = [row["words"][:2] for row in json.loads(run("topics", model, "--json", "-n", "3").stdout)]
    assert first == [["apple", "banana"], ["apple", "egg"], ["apple", "kiwi"]]
    rows = json.loads(run("topics", model, "--json", "-n", "2", "--relevance", "0.6").stdout)
    assert [row["words"] for row in rows] == own
    assert rows[0]["weights"] == pytest.approx([6 / lam[:, 0].sum(), 5 / lam[:, 0].sum()])
    assert run("topics", model, "-n", "2", "--relevance", "0.6").stdout.split()[2:4] == own[0]
    out = json.loads(run("eval", model, "--coherence", "c_npmi", "--top-n", "2", "--relevance", "0.6",
                         "--json").stdout)
    assert out["relevance"] == 0.6
    expected, _, _ = coh.coherence(own, reference, ["c_npmi"])
    assert out["coherence"]["c_npmi"]["per_topic"] == pytest.approx(expected["c_npmi"], rel=1e-12)
    loaded = load_model(model)
    assert out["diversity"] == coh.topic_diversity(loaded.lam, [0, 1, 2], scale=coh.relevance_scale(loaded, 0.6))
    assert all("coherence" in row for row in json.loads(run("topics", model, "--json", "--relevance", "0.6").stdout))
    assert not any("coherence" in row for row in json.loads(run("topics", model, "--json").stdout))
    for args in (["topics", model, "--relevance", "1.5"], ["topics", model, "--relevance", "nan"]):
        result = run(*args, ok=False)
        assert result.exit_code == 2 and "'--relevance'" in result.output
    for args in (["eval", model, reference.path, "--relevance", "0.6"], ["eval", model, "--relevance", "0.6"]):
        result = run(*args, ok=False)
        assert result.exit_code == 2 and "--relevance goes with --coherence" in result.output


# ----------------------------------------------------------------------------- sliding windows
def windows_of(doc, size):
    """gensim's boolean sliding windows of one document (utils.iter_windows, ignore_below_size
    False): doc[t:t + size] for every t, or the document itself when it is not longer."""
    if len(doc) <= size:
        return [doc]
    return [doc[t:t + size] for t in range(len(doc) - size + 1)]


def slow_window_counts(docs, topics, size):
    """(windows, df, pair_df) by listing every window of every document."""
    union = {w for t in topics for w in t}
    n, df, pair_df = 0, dict.fromkeys(union, 0), {}
    for t in topics:
        for a in t:
            for b in t:
                if a < b:
                    pair_df[(a, b)] = 0
    for doc in docs:
        for window in windows_of(doc, size):
            n += 1
            here = set(window)
            for w in union & here:
                df[w] += 1
            for a, b in pair_df:
                if a in here and b in here:
                    pair_df[(a, b)] += 1
    return n, df, pair_df


def write_ordered(path, docs, V):
    """A --keep-order corpus of token lists (word ids, -1 for a word outside the vocabulary)."""
    with CorpusWriter(path, [f"w{i}" for i in range(V)], shard_docs=7, keep_order=True) as out:
        for d, doc in enumerate(docs):
            known = np.array([w for w in doc if w >= 0], dtype=np.int64)
            ids, counts = np.unique(known, return_counts=True)
            out.add(f"d{d}", ids, counts, np.array(doc, dtype=np.int32))
    return Corpus(path)


@pytest.mark.parametrize("size", [1, 2, 5, 10, 110])
def test_count_windows_matches_listing_every_window(tmp_path, size):
    rng = np.random.default_rng(size)
    V = 40
    docs = [rng.integers(-1, V, size=rng.integers(1, 40)).tolist() for _ in range(60)]
    docs.append([30, 31, -1, 32])                          # holds no top word, still a window
    topics = [sorted(rng.choice(30, size=6, replace=False).tolist()) for _ in range(5)]
    reference = write_ordered(tmp_path / "c", docs, V)
    assert reference.keeps_order
    n, df, pair_df = coh.count_windows(reference, topics, size)
    assert (n, df, pair_df) == slow_window_counts(docs, topics, size)


def test_window_needs_a_corpus_that_keeps_order(reference):
    with pytest.raises(coh.TopicscaleError, match="--keep-order"):
        coh.coherence(TOPICS, reference, ["c_npmi"], window=10)


def test_gensim_default_windows_on_an_ordered_corpus(tmp_path):
    docs = [[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]] * 3
    reference = write_ordered(tmp_path / "c", docs, 13)
    assert coh.measure_windows(coh.MEASURES, reference) == {"u_mass": 0, "c_npmi": 10, "c_uci": 10, "c_v": 110}
    assert coh.measure_windows(coh.MEASURES, reference, 0) == dict.fromkeys(coh.MEASURES, 0)
    assert coh.measure_windows(["c_v", "u_mass"], reference, 4) == {"c_v": 4, "u_mass": 0}


# Reference corpus 3, prepared with --keep-order and --min-df 2 (zebra, yak and quince, in one
# document each, are outside the vocabulary but keep their places; the fifth document holds no
# top word). No word repeats less than 10 tokens apart in a document longer than a window,
# where gensim's accumulator differs (coherence.py). Computed with gensim 4.4.0:
#   texts = [d.split() for d in DOCS3]; dct = Dictionary(texts)
#   dct.filter_extremes(no_below=2, no_above=1.0, keep_n=None)
#   CoherenceModel(topics=TOPICS3, texts=texts, dictionary=dct, coherence=m, topn=10,
#                  window_size=w, processes=1).get_coherence_per_topic()   for w in (None, 3)
DOCS3 = [
    "apple banana cherry date egg fig grape kiwi lemon mango nut banana",
    "cherry date fig egg apple kiwi lemon banana grape",
    "kiwi lemon mango nut olive pear",
    "apple fig grape date cherry egg banana kiwi lemon mango nut olive apple",
    "olive pear quince",
    "banana apple",
    "zebra apple cherry yak banana date",
]
TOPICS3 = [["apple", "banana", "cherry", "date"], ["kiwi", "lemon", "mango", "nut"],
           ["fig", "grape", "egg", "apple", "lemon"]]
GENSIM3 = {
    ("c_npmi", None): [0.4618751098763905, 0.6390100136694016, 0.3554707616953265],
    ("c_uci", None): [0.17422796236001623, 0.30731257839623366, 0.1941039218845645],
    ("c_v", None): [0.9703659155055986, 0.9797280167886354, 0.9322248812851825],
    ("c_npmi", 3): [-0.07835830038125537, 0.14969563592929055, -0.15752159493951906],
    ("c_uci", 3): [-3.9953446059714426, -3.5621172978963656, -5.002976252385468],
    ("c_v", 3): [0.43422613235882324, 0.6142679218168462, 0.3398790793587727],
}


def test_sliding_windows_match_gensim(tmp_path):
    from topicscale.corpus.prepare import prepare
    src = tmp_path / "docs.txt"
    src.write_text("\n".join(DOCS3) + "\n")
    prepare([str(src)], tmp_path / "c", min_df=2, max_df=1.0, stopwords="none", keep_order=True,
            progress=False)
    reference = Corpus(tmp_path / "c")
    assert "zebra" not in reference.vocab and "olive" in reference.vocab
    for (name, window), expected in GENSIM3.items():
        scores, windows, _ = coh.coherence(TOPICS3, reference, [name], window)
        assert windows[name] == (window or coh.GENSIM_WINDOWS[name])
        assert scores[name] == pytest.approx(expected, rel=1e-12, abs=1e-12), (name, window)


def test_eval_window_option_and_refusals(hand_model, reference, tmp_path):
    model, _ = hand_model
    result = run("eval", model, "--coherence", "c_npmi", "--window", 10, ok=False)
    assert result.exit_code == 2 and "--keep-order" in result.output
    for flag, value in (("--seed", 1), ("--fold-in", "own"), ("--threads", 1)):
        result = run("eval", model, "--coherence", "c_npmi", flag, value, ok=False)
        assert result.exit_code == 2 and flag in result.output and "--coherence" in result.output
    result = run("eval", model, "--coherence", "u_mass", "--window", 0, ok=False)
    assert result.exit_code == 2 and "--window goes with c_uci, c_npmi and c_v" in result.output
    out = json.loads(run("eval", model, "--coherence", "c_npmi,u_mass", "--window", 0, "--json").stdout)
    assert out["coherence"]["c_npmi"]["window"] == 0 and out["coherence"]["u_mass"]["window"] == 0
