"""fit on a dask cluster against one process (issue 25): throughput, the overhead per minibatch in
bytes and milliseconds, the held-out cost of the larger minibatches a cluster needs, and a model of
the client's network traffic at internet scale against gensim's and Spark's designs.

    python benchmarks/bench_dask.py [--corpus nyt|sotu] [--repeats 3] [--quick]

Measured on CORPUS (prepared by corpora.py), K topics, the same seed everywhere:
  1. throughput: `topicscale fit` as whole processes, interleaved repeats: one process with
     --threads 1 and 2, and --workers 1 and 2 (a LocalCluster started by fit, one numba thread a
     worker); every run's model must be the same bit for bit. The overhead per minibatch is
     (train seconds of --workers 1 - those of one process with --threads 1) / minibatches: the
     same arithmetic on one core, plus dask's round trips and the bytes of step 2.
  2. bytes per minibatch (counted, not timed): one fit on a LocalCluster of 1 worker with every
     task's arguments and results sized as pickled, by kind (load, words, estep), against the
     dense V x K float64 matrix a step of Spark's or gensim's design moves.
  3. held-out cost of larger minibatches (not timed): per-word held-out log likelihood after 1 and
     3 passes for several --batch-size (the README's table).
  4. the traffic model (computed): V = 1M, K = 1000, 100 workers, a 10 Gbit/s client link.
--quick: a few hundred documents, 1 repeat, results under benchmarks/results-quick/ (checks the
machinery in a minute; its figures mean nothing). Writes OUT/dask.md and OUT/dask.json.
"""
import argparse
import datetime as dt
import json
import math
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from common import (BenchError, child_env, fmt_spread, machine, run,  # noqa: E402
                    topicscale_command, write_json)

# the internet-scale setting of the issue
SCALE = {"V": 1_000_000, "K": 1000, "workers": 100, "link_bytes_per_s": 10e9 / 8}
ZIPF_S = 1.0            # word frequencies of web text: p_v proportional to 1 / (v + 2.7)^s
# E-step rate per core, token-topic updates/s, and mean sweeps a document (benchmarks/results/
# kernel.md, nyt/K=200, single precision, 2 threads); a document's distinct words and tokens are
# the measured corpus's
KERNEL_RATE = 3.642e9
SWEEPS = 36.4


# ------------------------------------------------------------------------------ children
BYTES_CHILD = r"""
import json, pickle, sys
from collections import defaultdict
from topicscale import distributed, runs
from topicscale.corpus.shards import open_corpus
from topicscale.train import train
corpus_path, K, batch, chunk, passes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
config = runs.with_defaults({"corpus": corpus_path, "n_topics": K, "batch_size": batch, "chunk_docs": chunk,
                             "passes": passes, "local": "meanfield", "output": "-"})
corpus = open_corpus(corpus_path)
model = runs.new_model(config, corpus)
algo = runs.build_algorithm(model, config, corpus)
sent, back, tasks = defaultdict(int), defaultdict(int), defaultdict(int)
def sizeof(obj):
    # bytes on the wire: dask pickles task arguments and results (protocol 5, arrays out of band)
    buffers = []
    return len(pickle.dumps(obj, protocol=5, buffer_callback=buffers.append)) + sum(b.raw().nbytes for b in buffers)
with distributed.cluster(workers=1) as ex:
    submit, gather = ex.submit, ex.gather
    def counted_submit(fn, *args, what, **kw):
        future = submit(fn, *args, what=what, **kw)
        if what != "warm":                    # the warm-up runs once, before the first minibatch
            sent[what] += sum(sizeof(a) for a in args if not hasattr(a, "key"))
            tasks[what] += 1
        kinds[future.key] = what
        return future
    kinds = {}
    def counted_gather(futures):
        out = gather(futures)
        for f, r in zip(futures, out):
            if kinds.get(f.key) != "warm":
                back[kinds.get(f.key, "?")] += sizeof(r)
        return out
    ex.submit, ex.gather = counted_submit, counted_gather
    summary, _ = train(algo, corpus, runs.run_limits(config), config["seed"], progress=False,
                       executor=ex.fitting(corpus, chunk))
n = summary["batches"]
print(json.dumps({"batches": n, "V": corpus.n_words, "K": K, "batch_size": batch, "chunk_docs": chunk,
                  "tasks": dict(tasks), "sent": dict(sent), "back": dict(back)}))
"""

WORDS_CHILD = r"""
import json, sys
import numpy as np
from topicscale.corpus.shards import open_corpus
from topicscale.corpus.stream import MinibatchStream
corpus = open_corpus(sys.argv[1])
sizes = [int(x) for x in sys.argv[2].split(",")]
order = MinibatchStream(corpus, max(sizes), 0).epoch_order(0)
out = {}
for c in sizes:
    if c > len(order):            # no chunk of that many documents in this corpus
        continue
    counts = []
    for start in range(0, min(len(order), 20 * c) - c + 1, c):
        block = corpus.rows(order[start:start + c])
        counts.append((int(np.unique(block.indices).shape[0]), float(block.n_tokens)))
    out[c] = {"distinct_words": float(np.mean([w for w, _ in counts])), "tokens": float(np.mean([t for _, t in counts])),
              "chunks": len(counts)}
freq = np.zeros(corpus.n_words)
for block in corpus.blocks():
    np.add.at(freq, block.indices, block.counts)
print(json.dumps({"by_chunk": out, "unigram": (freq / freq.sum()).tolist(), "n_docs": corpus.n_docs,
                  "nnz": corpus.nnz, "n_tokens": corpus.n_tokens}))
"""


def ts_fit(ts, corpus, out, K, batch, chunk, passes, extra):
    return ts + ["fit", corpus, "-k", str(K), "--batch-size", str(batch), "--chunk-docs", str(chunk),
                 "--passes", str(passes), "--local", "meanfield", "--seed", "0", "--json", "--quiet",
                 "--force", "-o", str(out), *extra]


def same_arrays(a, b):
    import numpy as np
    x, y = np.load(Path(a) / "model.npz"), np.load(Path(b) / "model.npz")
    return sorted(x.files) == sorted(y.files) and all(np.array_equal(x[k], y[k]) for k in x.files)


def throughput(args, corpus, work, env, log):
    ts = topicscale_command()
    variants = {"one process, 1 thread": ["--threads", "1"], "one process, 2 threads": ["--threads", "2"],
                "--workers 1": ["--workers", "1"], "--workers 2": ["--workers", "2"]}
    runs_ = {k: [] for k in variants}
    for rep in range(args.repeats):
        for name, extra in variants.items():
            out = work / "models" / f"dask-{name.replace(' ', '').replace(',', '-')}"
            o, wall = run(ts_fit(ts, corpus, out, args.topics, args.batch_size, args.chunk_docs, args.passes, extra),
                          env, f"{name} ({rep + 1}/{args.repeats})", log)
            s = json.loads(o.strip().splitlines()[-1])
            runs_[name].append({"train_seconds": s["train_seconds"], "docs_per_s": s["docs_per_s"],
                                "batches": s["batches"], "wall_seconds": wall, "model": str(out)})
    first = runs_["one process, 1 thread"][0]["model"]
    identical = all(same_arrays(first, r[0]["model"]) for r in runs_.values())
    batches = runs_["--workers 1"][0]["batches"]
    overhead_ms = [1000 * (w["train_seconds"] - o["train_seconds"]) / batches
                   for w, o in zip(runs_["--workers 1"], runs_["one process, 1 thread"])]
    return {"runs": runs_, "identical_models": identical, "overhead_ms_per_minibatch": overhead_ms}


def bytes_per_minibatch(args, corpus, env, log):
    o, _ = run([sys.executable, "-c", BYTES_CHILD, corpus, args.topics, args.batch_size, args.chunk_docs,
                min(args.passes, 1)], env, "bytes per minibatch (LocalCluster of 1 worker)", log)
    r = json.loads(o.strip().splitlines()[-1])
    n = r["batches"]
    r["per_minibatch"] = {"sent": {k: v / n for k, v in r["sent"].items()},
                          "back": {k: v / n for k, v in r["back"].items()}}
    r["dense_matrix_bytes"] = r["V"] * r["K"] * 8
    return r


def heldout_cost(args, corpus, heldout, work, env, log):
    ts = topicscale_command()
    rows = []
    for batch in args.heldout_batches:
        row = {"batch_size": batch}
        for passes in (1, 3):
            out = work / "models" / f"dask-heldout-{batch}-{passes}"
            o, _ = run(ts_fit(ts, corpus, out, args.topics, batch, args.chunk_docs, passes,
                              ["--heldout", heldout, "--threads", str(args.threads)]),
                       env, f"held-out after {passes} pass(es), batch {batch}", log)
            row[f"passes_{passes}"] = json.loads(o.strip().splitlines()[-1])["heldout"]["per_word_ll"]
        rows.append(row)
    return rows


def expected_distinct(unigram, tokens):
    """E[distinct words] in `tokens` independent draws from `unigram` (an estimate: real documents
    repeat words within a document, and differ in topic between documents)."""
    import numpy as np
    p = np.asarray(unigram)
    return float(np.sum(-np.expm1(tokens * np.log1p(-p[p > 0]))))


def zipf(V, s=ZIPF_S, q=2.7):
    import numpy as np
    w = 1.0 / (np.arange(V) + q) ** s
    return w / w.sum()


def traffic_model(words, chunk_sizes):
    """The client's bytes per minibatch, and the workers it keeps busy before its link is the
    bottleneck, for this design, gensim's distributed LDA and Spark's online LDA, at SCALE."""
    V, K, P, bw = SCALE["V"], SCALE["K"], SCALE["workers"], SCALE["link_bytes_per_s"]
    doc_updates = words["nnz"] / words["n_docs"] * SWEEPS * K
    tokens_per_doc = words["n_tokens"] / words["n_docs"]
    p = zipf(V)
    rows = []
    for C in chunk_sizes:
        W = expected_distinct(p, C * tokens_per_doc)             # a chunk's distinct words (bound)
        chunk_seconds = C * doc_updates / KERNEL_RATE              # one chunk on one core
        per_chunk = W * K * 8                                      # rows out; statistics back (+ ids)
        ours_out, ours_in = P * per_chunk, P * (per_chunk + W * 12)
        # gensim (distributed LdaModel): every worker gets the K x V state (float32) and returns its
        # K x V sufficient statistics at every update
        gensim = P * V * K * 4
        # Spark (OnlineLDAOptimizer): broadcast of the dense K x V expElogbeta (float64; the driver
        # sends at least one copy, torrent does the rest) and a treeAggregate (depth 2) of dense
        # K x V statistics, of which the driver receives about sqrt(P)
        spark_out, spark_in = V * K * 8, math.ceil(math.sqrt(P)) * V * K * 8
        # the driver receives sqrt(P) dense matrices: link time sqrt(P) V K 8 / bw = chunk_seconds at
        spark_limit = (chunk_seconds * bw / (V * K * 8)) ** 2
        rows.append({
            "chunk_docs": C, "chunk_distinct_words": W, "chunk_seconds": chunk_seconds,
            "minibatch_docs": P * C,
            "ours": {"out": ours_out, "in": ours_in, "link_seconds": max(ours_out, ours_in) / bw,
                     "workers_before_link_bound": chunk_seconds * bw / (per_chunk + W * 12)},
            "gensim": {"out": gensim, "in": gensim, "link_seconds": gensim / bw,
                       "workers_before_link_bound": chunk_seconds * bw / (V * K * 4)},
            "spark": {"out": spark_out, "in": spark_in, "link_seconds": max(spark_out, spark_in) / bw,
                      "workers_before_link_bound": spark_limit}})
    return rows


def measure_words(corpus, sizes, env, log):
    o, _ = run([sys.executable, "-c", WORDS_CHILD, corpus, ",".join(map(str, sizes))], env,
               "distinct words per chunk (counted)", log)
    return json.loads(o.strip().splitlines()[-1])


# ------------------------------------------------------------------------------ report
def gb(x):
    return f"{x / 1e9:.2f} GB" if x >= 1e8 else f"{x / 1e6:.1f} MB"


def render(r):
    L = ["# fit on a dask cluster (issue 25)", ""]
    L.append(f"Written {r['date']} by `benchmarks/bench_dask.py` (`{r['command']}`); machine "
             f"{r['machine'].get('cpu', '?')}, load average at start {r['machine']['loadavg'][0]:.1f}. "
             f"Corpus {r['corpus']}, K = {r['topics']}, --batch-size {r['batch_size']}, --chunk-docs "
             f"{r['chunk_docs']}, --passes {r['passes']}, mean-field local step, seed 0.")
    L.append("")
    t = r.get("throughput")
    if t:
        L.append("## Throughput (timed; whole `topicscale fit` processes, interleaved repeats)")
        L.append("")
        L.append("| run | train s | docs/s |")
        L.append("|---|---:|---:|")
        for name, xs in t["runs"].items():
            L.append(f"| {name} | {fmt_spread([x['train_seconds'] for x in xs])} | "
                     f"{fmt_spread([x['docs_per_s'] for x in xs], 0)} |")
        L.append("")
        L.append(f"Every run wrote the same model, bit for bit: **{'yes' if t['identical_models'] else 'NO'}**. "
                 f"Overhead of the cluster per minibatch ((--workers 1 - one process on 1 thread) / "
                 f"minibatches): {fmt_spread(t['overhead_ms_per_minibatch'], 1)} ms. On this 2-core machine "
                 "2 workers cannot beat one process on 2 threads: the client's global step and dask's "
                 "scheduler share the same cores.")
        L.append("")
    else:
        L.append("Throughput: not measured in this run (--no-timing: the machine was shared); "
                 "`python benchmarks/bench_dask.py` on a quiet machine adds it.")
        L.append("")
    b = r["bytes"]
    pm = b["per_minibatch"]
    L.append("## Bytes per minibatch (task arguments and results as pickled, a LocalCluster of 1 worker)")
    L.append("")
    L.append("| task | to the workers | back to the client |")
    L.append("|---|---:|---:|")
    for kind in sorted(set(pm["sent"]) | set(pm["back"])):
        L.append(f"| {kind} | {pm['sent'].get(kind, 0) / 1e3:.1f} kB | {pm['back'].get(kind, 0) / 1e3:.1f} kB |")
    total = sum(pm["sent"].values()) + sum(pm["back"].values())
    L.append(f"| all | {sum(pm['sent'].values()) / 1e3:.1f} kB | {sum(pm['back'].values()) / 1e3:.1f} kB |")
    L.append("")
    L.append(f"Against the dense V x K float64 matrix ({b['V']} x {b['K']}: {b['dense_matrix_bytes'] / 1e6:.1f} MB) "
             f"that Spark broadcasts (and aggregates back, per partition) every minibatch: "
             f"{total / b['dense_matrix_bytes']:.2f} of one matrix, both ways together.")
    L.append("")
    h = r.get("heldout")
    if h:
        L.append("## Held-out cost of larger minibatches (not timed)")
        L.append("")
        L.append("| --batch-size | held-out per-word LL after 1 pass | after 3 passes |")
        L.append("|---:|---:|---:|")
        for row in h:
            L.append(f"| {row['batch_size']} | {row['passes_1']:.4f} | {row['passes_3']:.4f} |")
        L.append("")
    m = r["model"]
    s = SCALE
    L.append(f"## Traffic at internet scale (computed): V = {s['V']:,}, K = {s['K']}, {s['workers']} workers, "
             f"a {s['link_bytes_per_s'] * 8 / 1e9:.0f} Gbit/s client link")
    L.append("")
    w = r["words"]
    L.append(f"Documents shaped as {r['corpus']}'s ({w['n_tokens'] / w['n_docs']:.0f} tokens, "
             f"{w['nnz'] / w['n_docs']:.1f} distinct words). A chunk's distinct words: the expected number "
             f"in its tokens drawn independently from a Zipf law (s = {ZIPF_S}) over 1M words (the same "
             f"estimate from {r['corpus']}'s own word frequencies against its measured chunks: "
             + ", ".join(f"{c} documents {v['bound']:.0f} estimated, {v['distinct_words']:.0f} measured"
                         for c, v in w["check"].items()) + "). "
             f"A chunk's compute: documents x distinct words x {SWEEPS} sweeps x K at "
             f"{KERNEL_RATE / 1e9:.2f} G updates/s a core (benchmarks/results/kernel.md, NYT at K = 200). "
             "One chunk a worker per minibatch.")
    L.append("")
    L.append("| chunk docs | chunk distinct words | chunk compute s | design | client out / minibatch | client in | "
             "link s / minibatch | workers before the link is the bottleneck |")
    L.append("|---:|---:|---:|---|---:|---:|---:|---:|")
    for row in m:
        for name in ("ours", "gensim", "spark"):
            d = row[name]
            limit = f"{d['workers_before_link_bound']:.1f}"
            L.append(f"| {row['chunk_docs']} | {row['chunk_distinct_words']:,.0f} | {row['chunk_seconds']:.1f} | "
                     f"{name} | {gb(d['out'])} | {gb(d['in'])} | {d['link_seconds']:.1f} | {limit} |")
    L.append("")
    L.append("Reading: this design's client moves, per chunk, the rows of the chunk's own words both ways, "
             "so its link time grows with the workers and stays below the chunks' compute up to the last "
             "column's count; past it, the link sets the pace. What the design does then: larger chunks "
             "(the rows grow as the chunk's distinct words, sublinearly, the compute linearly: compare the "
             "rows); and, not built yet, a reduction of the chunks' statistics among the workers in a fixed "
             "tree (the same order, so the same bits) with the minibatch's rows sent once and shared "
             "between workers, which would make the client's traffic that of one minibatch's distinct words "
             "however many workers. gensim moves the whole K x V state both ways for every worker and "
             "update. Spark broadcasts the dense K x V matrix every minibatch and its driver receives about "
             "sqrt(workers) dense statistics from its tree aggregation: hopeless while chunks are small "
             "against V, but once a chunk's words approach the vocabulary (the last rows) a dense tree "
             "reduction beats per-chunk sparse statistics sent to the client, which is why the tree "
             "reduction above is the next step for this design.")
    L.append("")
    L.append("## Commands")
    L.append("")
    L.append("```")
    for e in r["log"]:
        L.append(f"{e['command'][:300]}    # {e['what']}: {e['wall_seconds']:.2f} s")
    L.append("```")
    return "\n".join(L) + "\n"


def quick_corpus(work, env, log):
    """A few hundred State of the Union paragraphs, prepared here (--quick)."""
    import gzip
    src = ROOT / "data" / "sotu.jsonl.gz"
    small = work / "sotu-quick.jsonl"
    with gzip.open(src, "rt", encoding="utf-8") as fh, open(small, "w", encoding="utf-8") as out:
        for i, line in zip(range(900), fh):
            out.write(line)
    corpus = work / "sotu-quick"
    run(topicscale_command() + ["prepare", small, "--heldout", "0.1", "--min-df", "2", "--quiet", "-o", corpus],
        env, "prepare the quick corpus", log)
    return str(corpus), str(corpus) + "-heldout"


def orchestrate(args):
    work, out = Path(args.work), Path(args.out)
    (work / "models").mkdir(parents=True, exist_ok=True)
    log = []
    env = child_env(args.threads, work / "numba-cache")
    if args.quick:
        corpus, heldout = quick_corpus(work, env, log)
    else:
        from corpora import prepare_all
        prepared, _ = prepare_all([args.corpus], work, args.cache, env, log, allow_apt=False)
        corpus, heldout = prepared[args.corpus]["train"], prepared[args.corpus]["heldout"]
    result = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
              "command": " ".join([Path(sys.executable).name] + sys.argv), "machine": machine(),
              "corpus": "sotu (900 paragraphs, --quick)" if args.quick else args.corpus, "topics": args.topics,
              "batch_size": args.batch_size, "chunk_docs": args.chunk_docs, "passes": args.passes}
    if not args.no_timing:
        result["throughput"] = throughput(args, corpus, work, env, log)
    result["bytes"] = bytes_per_minibatch(args, corpus, env, log)
    if not args.no_heldout:
        result["heldout"] = heldout_cost(args, corpus, heldout, work, env, log)
    sizes = [args.chunk_docs // 4, args.chunk_docs] if args.quick else [500, 2000, 8000]
    words = measure_words(corpus, sizes, env, log)
    words["check"] = {c: {"distinct_words": v["distinct_words"],
                          "bound": expected_distinct(words["unigram"], v["tokens"])}
                      for c, v in words["by_chunk"].items()}
    del words["unigram"]
    result["words"] = words
    result["model"] = traffic_model(words, [2000, 20000, 200000])
    result["machine"]["loadavg_at_end"] = os.getloadavg()
    result["log"] = log
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "dask.json", result)
    md = render(result)
    (out / "dask.md").write_text(md)
    print(md)
    return result


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", default="nyt", choices=("nyt", "sotu"))
    ap.add_argument("--topics", type=int, default=50)
    ap.add_argument("--batch-size", type=int, default=4000)
    ap.add_argument("--chunk-docs", type=int, default=2000)
    ap.add_argument("--passes", type=float, default=3)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--heldout-batches", type=lambda s: [int(x) for x in s.split(",")], default=[500, 2000, 8000])
    ap.add_argument("--no-timing", action="store_true", help="skip the timed throughput runs")
    ap.add_argument("--no-heldout", action="store_true", help="skip the held-out cost of larger minibatches")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--cache", default=str(HERE / "cache"))
    ap.add_argument("--work", default=str(HERE / "work"))
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    if args.quick:
        args.topics, args.batch_size, args.chunk_docs, args.passes, args.repeats = 10, 200, 100, 1, 1
        args.heldout_batches = [100, 400]
        args.work = str(Path(tempfile.mkdtemp(prefix="bench-dask-quick-")))
    args.out = args.out or str(HERE / ("results-quick" if args.quick else "results"))
    try:
        orchestrate(args)
    except BenchError as exc:
        print(f"bench: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
