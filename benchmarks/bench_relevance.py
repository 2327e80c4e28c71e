"""Top words ranked by relevance (`topics --relevance`, Sievert and Shirley 2014) against ranked by
probability: NPMI, diversity and overlapping pairs of the same topics, topicscale's default beside
tomotopy's collapsed Gibbs sampler. No model is trained: the topics are those bench_quality.py
left in WORK/quality/<corpus>-k<K> (its `default` fit and tomotopy's last snapshot), so run that
first.

    python benchmarks/bench_relevance.py [--corpora sotu,nyt,...] [--topics 50] [--relevance 1,0.8,0.6,0.4]

Ranking: r(w, k) = lambda log p(w|k) + (1 - lambda) log(p(w|k) / p(w)). topicscale's p(w) is its
model's own share of lambda (coherence.relevance_scale, what `topics --relevance` shows);
tomotopy's snapshot holds p(w|k) only, so its p(w) is the training corpus's word frequency (as
pyLDAvis takes it). The measures are bench_quality.py's: NPMI of the top 10 (boolean documents of
the training corpus, a pair that never shares a document -1, mean over all K topics), diversity
(distinct share of all topics' top 25) and pairs of topics sharing more than half of their top 10.
The model is the same at every lambda: held-out likelihood does not change. Writes relevance.md
and relevance.json.
"""
import argparse
import datetime as dt
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from bench_quality import DIVERSITY_N, TOP_N, npmi_per_topic, overlapping_pairs  # noqa: E402
from common import BenchError, machine, write_json  # noqa: E402

RELEVANCE = (1.0, 0.8, 0.6, 0.4)
EXAMPLES = 5          # topics shown both ways: the default's least coherent by probability


def word_frequencies(corpus):
    counts = np.zeros(corpus.n_words)
    for block in corpus.blocks():
        np.add.at(counts, block.indices, block.counts)
    return counts / counts.sum()


def ranked(matrix, scale):
    """Each column's top DIVERSITY_N rows of a V x K matrix (by relevance with relevance factors
    `scale`), largest first: DIVERSITY_N x K."""
    from topicscale.coherence import top_words
    return np.stack([ids for ids, _ in top_words(matrix, DIVERSITY_N, range(matrix.shape[1]), scale)], axis=1)


def measures(top, corpus):
    lists = [list(map(int, top[:TOP_N, k])) for k in range(top.shape[1])]
    npmi = npmi_per_topic(lists, corpus)
    return {"npmi": float(np.mean(npmi)), "per_topic_npmi": npmi,
            "diversity": float(np.unique(top).size / top.size), "overlaps": overlapping_pairs(lists)}


def run_case(folder, corpus, relevance):
    from topicscale.coherence import relevance_factors, relevance_scale
    from topicscale.models import load_model
    model = load_model(folder / "default")
    snapshots = sorted((folder / "tomotopy").glob("snap-*.npy"))
    if not snapshots:
        raise BenchError(f"{folder}/tomotopy holds no snapshot: run bench_quality.py first")
    gibbs = np.load(snapshots[-1]).astype(np.float64)
    gibbs = np.ascontiguousarray((gibbs / gibbs.sum(axis=1, keepdims=True)).T)        # V x K
    p = word_frequencies(corpus)
    rows, tops = [], {}
    for lam in relevance:
        gibbs_scale = relevance_factors(p, lam)
        for tool, matrix, scale in (("topicscale default", np.asarray(model.lam), relevance_scale(model, lam)),
                                    (f"tomotopy, {snapshots[-1].name}", gibbs, gibbs_scale)):
            top = ranked(matrix, scale)
            tops[tool, lam] = top
            rows.append(dict(tool=tool, relevance=lam, **measures(top, corpus)))
    first = next(r for r in rows if r["tool"] == "topicscale default" and r["relevance"] == relevance[0])
    worst = np.argsort(first["per_topic_npmi"], kind="stable")[:EXAMPLES]
    vocab = corpus.vocab
    examples = [{"topic": int(k), "words": {str(lam): [vocab[w] for w in tops["topicscale default", lam][:TOP_N, k]]
                                            for lam in relevance}} for k in worst]
    for r in rows:
        r.pop("per_topic_npmi")
    return {"rows": rows, "examples": examples}


def render(result):
    lines = ["# Top words by relevance against by probability", "",
             f"Written {result['date']} by `benchmarks/bench_relevance.py` from the topics that "
             "`bench_quality.py` fitted (its `default` row and tomotopy's last snapshot). Relevance "
             "lambda: lambda log p(w|k) + (1 - lambda) log(p(w|k) / p(w)); 1 is the probability ranking "
             "every other table uses. NPMI of the top 10 (training corpus as boolean documents, a pair "
             "never sharing a document -1), diversity (distinct share of the top 25), overlapping pairs "
             "(sharing more than half of the top 10). The topics are the same in every row of a tool, so "
             "held-out likelihood is unchanged.", ""]
    for case in result["cases"]:
        lines += [f"## {case['case']}", "", "| tool | relevance | NPMI | diversity | overlapping pairs |",
                  "|---|---:|---:|---:|---:|"]
        lines += [f"| {r['tool']} | {r['relevance']:g} | {r['npmi']:.3f} | {r['diversity']:.2f} | {r['overlaps']} |"
                  for r in case["rows"]]
        lines += ["", "The default's least coherent topics by probability, and the same topics by relevance:", ""]
        for ex in case["examples"]:
            lines += [f"- topic {ex['topic']}:"]
            lines += [f"  - {lam}: {' '.join(words)}" for lam, words in ex["words"].items()]
        lines.append("")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpora", default="sotu,nyt,foldoc,debian,gcide,wordnet,fortunes,manpages,pydocs,kjv")
    ap.add_argument("--topics", default="50")
    ap.add_argument("--relevance", default=",".join(map(str, RELEVANCE)))
    ap.add_argument("--work", type=Path, default=HERE / "work")
    ap.add_argument("--out", type=Path, default=HERE / "results")
    args = ap.parse_args(argv)
    from topicscale.corpus.shards import Corpus
    relevance = tuple(float(x) for x in args.relevance.split(","))
    result = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "machine": machine(),
              "relevance": relevance, "cases": []}
    for name in args.corpora.split(","):
        for K in args.topics.split(","):
            folder = args.work / "quality" / f"{name}-k{K}"
            if not (folder / "default").is_dir():
                print(f"skipped {name} K={K}: no {folder}/default (run bench_quality.py first)", file=sys.stderr)
                continue
            case = run_case(folder, Corpus(args.work / name), relevance)
            result["cases"].append(dict(case, case=f"{name}/K={K}"))
            print(f"{name} K={K} done", file=sys.stderr, flush=True)
    if not result["cases"]:
        raise BenchError("no bench_quality.py topics found under --work: run bench_quality.py first")
    args.out.mkdir(parents=True, exist_ok=True)
    write_json(args.out / "relevance.json", result)
    (args.out / "relevance.md").write_text(render(result))
    print(render(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
