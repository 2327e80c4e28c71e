"""The E-step kernel against the machine: throughput, roofline, threads, and where a fit's time goes.

    python benchmarks/bench_kernel.py [--corpora nyt,sotu,gcide] [--topics 50,200] [--repeats 5]

For each corpus and K:
  1. a model is fitted for one pass (at most 30,000 documents) with `topicscale fit` (realistic
     topics; the same shared settings as bench_peers.py, and the local step a whole pass of the
     corpus gets: cvb0 on GCIDE), and the first --docs documents of its epoch-0 minibatch order are taken
     as real minibatches of S = 500;
  2. `MeanField().fit` (topicscale's E-step, the kernel `topicscale fit` runs) is timed on them with
     1 and 2 numba threads, in single precision (float32 topic rows: what training runs) and in
     double (what eval and infer run); throughput = token-topic updates per second per core,
     updates = sum over documents of distinct words x sweeps x K;
     CVB0's document step (the default local step on short documents, float64, 2 passes a
     document) is timed too, against the float64 roofline with the same 2 passes;
  3. the roofline: a numba gather-and-multiply-add loop over the same minibatches, the same topic
     matrix (word-major V' x K, rows gathered by word id, float32 and float64) and the same number
     of sweeps per document (kernels_whatif.roofline_axpy; in float64 also prefetching rows 4 words
     ahead in the first sweep, as CVB0's kernel does: the faster counts), with 1 and 2 threads; also the "fused" loop that
     does the E-step's two multiply-adds per update and nothing else (roofline_fused);
  4. what-if variants of the sweep (kernels_whatif) that show what the digamma, the unvectorised
     dot product and float64 cost;
  5. all of it interleaved: every repeat runs every variant and thread count once, in turn.
Then the time of whole `topicscale fit` runs is attributed: py-spy samples a fit (Python frames
and native frames), and a step anatomy times each stage of an SVI minibatch step in process.

Writes OUT/kernel.md, OUT/kernel.json (and the py-spy flame data under WORK).
"""
import argparse
import datetime as dt
import json
import os
import shutil
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from common import (BenchError, child_env, fmt_percent_runs, fmt_spread, machine, med, run, run_worker,  # noqa: E402
                    spread, topicscale_command, write_json)

# base models and profiled fits stop after this many documents (one pass of NYT and SOTU, a
# quarter of GCIDE): realistic topics and profiles without minutes of fitting
MAX_DOCS = 30000
SETTINGS = {"batch_size": 500, "kappa": 0.7, "tau": 10.0, "eta": 0.01, "max_iter": 100, "tol": 1e-3, "seed": 0}


# ============================================================================ workers
def _batches(spec):
    """The first spec['docs'] documents of epoch 0 as minibatches with the topic rows the model's
    E-step runs on (E[beta] for models trained with the default --estep-beta mean)."""
    import numpy as np
    from topicscale import registry
    from topicscale.corpus.shards import Corpus
    from topicscale.corpus.stream import MinibatchStream
    from topicscale.models import load_model
    model = load_model(spec["model"])
    estep = registry.local_step_for(model)
    corpus = Corpus(spec["train"])
    S = SETTINGS["batch_size"]
    order = MinibatchStream(corpus, S, SETTINGS["seed"]).epoch_order(0)[:spec["docs"]]
    out = []
    for lo in range(0, len(order), S):
        batch = corpus.rows(order[lo:lo + S])
        words, local = np.unique(batch.indices, return_inverse=True)
        topics = np.ascontiguousarray(estep.estep_topics(model, words))
        out.append({"indptr": batch.indptr, "indices": local.astype(np.int32), "counts": batch.counts,
                    "topics": topics, "topics32": topics.astype(np.float32), "alpha": model.local_prior(),
                    "words": int(words.shape[0])})
    return model, out


def worker_measure(spec):
    import numba
    import numpy as np
    import kernels_whatif as kw
    from topicscale.kernels.prefetch import PREFETCH_AHEAD
    from topicscale.inference.local_steps.cvb0 import CVB0
    from topicscale.inference.local_steps.meanfield import MeanField
    model, batches = _batches(spec)
    K = model.n_topics
    threads_list = [t for t in spec["threads"] if t <= numba.config.NUMBA_NUM_THREADS]
    local = MeanField(SETTINGS["max_iter"], SETTINGS["tol"])

    # the real (single-precision) E-step once: sweeps per document (deterministic), the work in
    # updates (in double, a document may need a sweep more or less: 5 in 205,500 on NYT K=50)
    for b in batches:
        res = local.fit(b["indptr"], b["indices"], b["counts"], b["topics"], b["alpha"], b["topics32"])
        b["sweeps"] = res.sweeps.astype(np.int64)
    nnz = np.array([np.diff(b["indptr"]) for b in batches], dtype=object)
    updates = float(sum(float(np.sum(np.diff(b["indptr"]) * b["sweeps"])) for b in batches) * K)
    docs = sum(b["indptr"].shape[0] - 1 for b in batches)
    del nnz

    def run_estep(single):
        for b in batches:
            local.fit(b["indptr"], b["indices"], b["counts"], b["topics"], b["alpha"],
                      b["topics32"] if single else None)

    def make(fn, use32=False, with_alpha=True, sweeps="sweeps", **options):
        def go(threads):
            n_chunks = max(1, 4 * threads)
            out = np.zeros(n_chunks)
            for b in batches:
                topics = b["topics32"] if use32 else b["topics"]
                if with_alpha:
                    fn(b["indptr"], b["indices"], b["counts"], topics, b["alpha"], b[sweeps], n_chunks, out)
                else:
                    fn(b["indptr"], b["indices"], b["counts"], topics, b[sweeps], n_chunks, out, **options)
        return go

    # CVB0's document step (the default local step on short documents): a fixed burn_in + 1
    # passes over each document's words, timed as training runs it (with the statistics, into one
    # per-entry buffer that every minibatch reuses, as CVB0's EntryBuffer does: a buffer per
    # minibatch would stream 4 x 3.4 MB through the 8 MB L3 at K=50 and time DRAM writes)
    cvb0 = CVB0()
    entries = np.empty((max(b["indices"].shape[0] for b in batches), K))
    for b in batches:
        b["passes"] = np.full(b["indptr"].shape[0] - 1, cvb0.burn_in + 1, dtype=np.int64)
        b["entries"] = entries[:b["indices"].shape[0]]
    cvb0_updates = float(sum(float(np.sum(np.diff(b["indptr"]) * b["passes"])) for b in batches) * K)

    def run_cvb0(threads):
        for b in batches:
            cvb0._run(b["indptr"], b["indices"], b["counts"], b["topics"], b["alpha"], b["entries"])

    variants = {
        "estep": lambda threads: run_estep(True),
        "cvb0": run_cvb0,
        "roofline_axpy_cvb0": make(kw.roofline_axpy, with_alpha=False, sweeps="passes"),
        "roofline_axpy_cvb0_prefetch": make(kw.roofline_axpy, with_alpha=False, sweeps="passes",
                                            ahead=PREFETCH_AHEAD),
        "estep_double": lambda threads: run_estep(False),
        "roofline_axpy32": make(kw.roofline_axpy, use32=True, with_alpha=False),
        "roofline_axpy": make(kw.roofline_axpy, with_alpha=False),
        "roofline_axpy_prefetch": make(kw.roofline_axpy, with_alpha=False, ahead=PREFETCH_AHEAD),
        "roofline_fused": make(kw.roofline_fused, with_alpha=False),
        "sweep_nodigamma": make(kw.sweep_nodigamma),
        "sweep_fastdigamma": make(kw.sweep_fastdigamma),
        "sweep_lanes8": make(kw.sweep_lanes8),
        "sweep_fastmath": make(kw.sweep_fastmath),
        "sweep_f32": make(kw.sweep_f32, use32=True),
    }
    if spec.get("only"):
        variants = {k: v for k, v in variants.items() if k in spec["only"]}
    # warm up (compile or load from the numba cache) outside the timings
    for name, fn in variants.items():
        for t in threads_list:
            numba.set_num_threads(t)
            fn(t)
    times = defaultdict(list)
    loads = []
    for rep in range(spec["repeats"]):
        names = list(variants)
        names = names[rep % len(names):] + names[:rep % len(names)]      # rotate the order
        for name in names:
            for t in (threads_list if rep % 2 == 0 else threads_list[::-1]):
                numba.set_num_threads(t)
                loads.append(os.getloadavg()[0])
                t0 = time.perf_counter()
                variants[name](t)
                times[f"{name}@{t}"].append(time.perf_counter() - t0)
    return {"K": K, "docs": docs, "batches": len(batches), "updates": updates,
            "updates_by_variant": {"cvb0": cvb0_updates, "roofline_axpy_cvb0": cvb0_updates,
                                   "roofline_axpy_cvb0_prefetch": cvb0_updates},
            "mean_sweeps": float(np.mean(np.concatenate([b["sweeps"] for b in batches]))),
            "mean_distinct_words": float(np.mean(np.concatenate([np.diff(b["indptr"]) for b in batches]))),
            "local_words_per_batch": [b["words"] for b in batches],
            "topic_matrix_mb_per_batch": float(np.mean([b["topics"].nbytes for b in batches]) / 2 ** 20),
            "times": dict(times), "loadavg": loads, "threads": threads_list}


def worker_anatomy(spec):
    """Time each stage of topicscale's SVI minibatch step (the calls MeanField.statistics and
    SVI.update make, in the same order) over the first spec['batches'] minibatches of a pass.
    The local step is the model's (cvb0 for models that `fit` trained with it)."""
    import numba
    import numpy as np
    from topicscale import registry
    from topicscale.corpus.shards import Corpus
    from topicscale.corpus.stream import MinibatchStream
    from topicscale.inference.schedule import advance, robbins_monro
    from topicscale.kernels import meanfield
    from topicscale.kernels.minibatch import distinct_words, word_major
    from topicscale.models import load_model
    from topicscale.stats import SufficientStats
    numba.set_num_threads(spec["threads"])
    model = load_model(spec["model"])
    corpus = Corpus(spec["train"])
    local = registry.local_step_for(model)
    stream = MinibatchStream(corpus, SETTINGS["batch_size"], SETTINGS["seed"])
    D = corpus.n_docs
    t = defaultdict(float)
    warm = True
    for i, (_, batch) in enumerate(stream()):
        if i >= spec["batches"] + 1:
            break
        clock = time.perf_counter
        t0 = clock()
        _, batch = next(iter([(None, corpus.rows(batch.rows))]))            # 1. read (gather rows)
        t1 = clock()
        words, loc = distinct_words(batch.indices)                            # 2. local word ids
        t2 = clock()
        topic_rows = local.estep_topics(model, words)                        # 3. E-step topic rows
        t3 = clock()
        if local.name == "meanfield":
            single = topic_rows.astype(np.float32) if local.precision == "single" else None
            result = local.fit(batch.indptr, loc, batch.counts, topic_rows, model.local_prior(), single)  # 4. E-step
            t4 = clock()
            word_ptr, order, doc = word_major(batch.indptr, loc, words.shape[0])   # 5. transpose
            t5 = clock()
            word_topic = np.empty((words.shape[0], model.n_topics))
            meanfield.word_topic_statistics(word_ptr, doc, result.token_weight[order],
                                            result.exp_elog_theta, word_topic)   # 6. statistics kernel
            word_topic *= topic_rows
            stats = SufficientStats(words, word_topic, batch.n_docs, batch.n_tokens)
        else:                     # cvb0: its kernel writes per-entry vectors, summed per word
            t4 = t5 = t3
            stats, _ = local.statistics(batch, model, topics=topic_rows)
        t6 = clock()
        rho = robbins_monro(model.step, SETTINGS["tau"], SETTINGS["kappa"])  # 7. global step (SVI.update)
        model.update_topics(rho, stats.words, rho * D / stats.n_docs, stats.word_topic)
        advance(model, stats.n_docs)
        t8 = clock()
        model.is_finite()                                                    # 8. driver's finiteness check
        t9 = clock()
        if warm:                  # the first minibatch loads the kernels: not counted
            warm = False
            continue
        for name, a, b in (("read minibatch (Corpus.rows)", t0, t1), ("np.unique word ids", t1, t2),
                           ("topic rows of the minibatch's words (estep_topics: E[beta] or exp(E[log beta]) of "
                            "their lambda rows, with the column sums the last update kept)", t2, t3),
                           ("E-step kernel (MeanField.fit; single precision: with the float32 copy of the rows)", t3, t4),
                           ("transpose minibatch (argsort, bincount)", t4, t5),
                           ("statistics kernel + scaling (word_topic_statistics; cvb0: CVB0.statistics, its "
                            "kernel and the per-word sums)", t5, t6),
                           ("global step (LDAModel.update_topics: lambda kept as scale * store + shift, so the "
                            "minibatch's rows of the store and its column sums; a pass over V x K only to settle)",
                            t6, t8),
                           ("is_finite (of the column sums the update kept)", t8, t9)):
            t[name] += b - a
    n = spec["batches"]
    return {"batches": n, "stage_seconds": dict(t), "total": sum(t.values()), "V": model.n_words, "K": model.n_topics,
            "local": local.name,
            "lambda_mb": model.lam.nbytes / 2 ** 20}


def run_worker_main(kind, spec_path):
    spec = json.loads(Path(spec_path).read_text())
    result = {"measure": worker_measure, "anatomy": worker_anatomy}[kind](spec)
    Path(spec["result_out"]).write_text(json.dumps(result, default=float))
    return 0


# ============================================================================ orchestrator
def whole_pass_local(corpus):
    """The local step `fit` picks for a whole pass of the corpus (cvb0 on GCIDE). The fits here
    stop after MAX_DOCS documents, too few updates for that choice, so they pass it explicitly:
    the step anatomy and the profile then time what training on the corpus runs."""
    from topicscale.runs import default_local
    return default_local({"model": "lda", "algorithm": "svi", "corpus": corpus["train"], "passes": 1,
                          "max_docs": None, "batch_size": SETTINGS["batch_size"]})


def fit_command(corpus, K, threads, out):
    """`topicscale fit` of a K-topic model on MAX_DOCS documents of the corpus, with the shared
    settings and whole_pass_local's local step, into `out`."""
    local = whole_pass_local(corpus)
    estep = ["--max-iter", "100", "--tol", "0.001"] if local == "meanfield" else []
    return topicscale_command() + [
        "fit", corpus["train"], "-k", str(K), "--batch-size", str(SETTINGS["batch_size"]), "--passes", "1",
        "--max-docs", str(MAX_DOCS), "--local", local, "--kappa", "0.7", "--tau", "10", "--alpha", repr(1.0 / K),
        "--eta", "0.01", *estep, "--threads", str(threads), "--seed", "0", "--quiet", "--json", "--force",
        "-o", str(out)]


def base_model(corpus, K, work, env, log, threads):
    """The model fit_command fits (reused when present, with the same command)."""
    out = Path(work) / "models" / f"{corpus['name']}-k{K}-1pass"
    cmd = fit_command(corpus, K, threads, out)
    stamp = out / "bench-recipe.json"
    if not ((out / "model.npz").is_file() and stamp.is_file() and json.loads(stamp.read_text()) == cmd[1:]):
        run(cmd, env, f"fit base model {out.name}", log)
        stamp.write_text(json.dumps(cmd[1:]))
    return out


def pyspy_profile(corpus, K, work, env, log, threads, rate=250):
    """py-spy samples a whole fit_command run; returns the aggregated profile."""
    pyspy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(pyspy).exists():
        return {"skipped": "py-spy is not installed (pip install py-spy)"}
    out_dir = Path(work) / "profiles"
    out_dir.mkdir(parents=True, exist_ok=True)
    raw = out_dir / f"pyspy-{corpus['name']}-k{K}.txt"
    model = Path(work) / "models" / f"profile-{corpus['name']}-k{K}"
    fit = fit_command(corpus, K, threads, model)
    # Python frames only: py-spy cannot unwind numba's JIT-compiled frames (with --native it
    # attributes them to unrelated libpython symbols), so the kernel's inside is split by the
    # what-if variants and the step anatomy instead.
    cmd = [pyspy, "record", "--rate", str(rate), "--format", "raw", "-o", str(raw), "--"] + fit
    try:
        stdout, wall = run(cmd, env, f"py-spy record fit {corpus['name']} K={K}", log)
    except BenchError as exc:
        return {"skipped": f"py-spy failed: {str(exc).splitlines()[0]}"}
    return aggregate_pyspy(raw, stdout, wall)


def _frame_name(frame):
    # "function (file:line)" -> "function (file)"; native frames have no file
    name = frame.strip()
    if " (" in name:
        fn, rest = name.split(" (", 1)
        path = rest.rsplit(")", 1)[0].rsplit(":", 1)[0]
        short = "/".join(Path(path).parts[-2:]) if path else ""
        return f"{fn} ({short})"
    return name


def aggregate_pyspy(raw, stdout, wall):
    """Inclusive share of samples per Python function of topicscale, and the leaf (self) frames."""
    inclusive, leaf = Counter(), Counter()
    total = 0
    idle = 0
    for line in Path(raw).read_text().splitlines():
        if not line.strip():
            continue
        stack, _, count = line.rpartition(" ")
        try:
            n = int(count)
        except ValueError:
            continue
        frames = stack.split(";")
        if frames and frames[0].startswith("thread"):
            frames = frames[1:]
        total += n
        names = [_frame_name(f) for f in frames]
        leafname = names[-1] if names else "?"
        leaf[leafname] += n
        if any(x in leafname for x in ("pthread_cond_wait", "futex", "sem_wait", "__GI___poll", "epoll_wait",
                                       "gomp_barrier", "gomp_team_barrier", "sched_yield")):
            idle += n
        for name in set(names):
            inclusive[name] += n
    summary = {}
    for line in stdout.strip().splitlines():
        if line.startswith("{"):
            try:
                summary = json.loads(line)
            except ValueError:
                pass
    return {"samples": total, "idle_samples": idle, "wall_seconds": wall, "fit_summary": summary,
            "inclusive_top": [(k, v / total) for k, v in inclusive.most_common(40)] if total else [],
            "leaf_top": [(k, v / total) for k, v in leaf.most_common(25)] if total else [],
            "raw": str(raw)}


def orchestrate(args):
    from corpora import prepare_all
    work = Path(args.work)
    out = Path(args.out)
    work.mkdir(parents=True, exist_ok=True)
    kwork = work / "kernel"
    kwork.mkdir(parents=True, exist_ok=True)
    log = []
    env = child_env(args.threads, work / "numba-cache")
    corpora, skipped = prepare_all(args.corpora, work, args.cache, env, log, allow_apt=not args.no_apt)
    results = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
               "command": " ".join([Path(sys.executable).name] + sys.argv), "machine": machine(),
               "settings": dict(SETTINGS, threads=args.threads, repeats=args.repeats, docs=args.docs),
               "corpora": corpora, "skipped_corpora": skipped, "cases": {}, "anatomy": {}, "profiles": {},
               "log": log}
    for name, c in corpora.items():
        for K in args.topics:
            model = base_model(c, K, work, env, log, args.threads)
            spec = {"model": str(model), "train": c["train"], "docs": args.docs, "repeats": args.repeats,
                    "only": [v for v in args.variants.split(",") if v] if args.variants else None,
                    "threads": [1, args.threads] if args.threads > 1 else [1], "tag": f"kernel-{name}-k{K}"}
            r = run_worker(Path(__file__), "measure", spec, kwork, env, log, f"kernel {name} K={K}")
            results["cases"][f"{name}/K={K}"] = summarize_case(r, args.threads)
            if args.anatomy:
                a = run_worker(Path(__file__), "anatomy", {"model": str(model), "train": c["train"],
                                                           "batches": args.anatomy_batches, "threads": args.threads,
                                                           "tag": f"anatomy-{name}-k{K}"},
                               kwork, env, log, f"step anatomy {name} K={K}")
                results["anatomy"][f"{name}/K={K}"] = a
    for item in args.profile:
        name, K = item.split(":")
        if name in corpora:
            results["profiles"][f"{name}/K={K}"] = pyspy_profile(corpora[name], int(K), work, env, log, args.threads)
    results["machine"]["loadavg_at_end"] = os.getloadavg()
    write_json(out / f"{args.name}.json", results)
    md = render(results)
    (out / f"{args.name}.md").write_text(md)
    print(md)
    return results


def variant_updates(raw, name):
    """The token-topic updates a variant does: the mean-field sweeps', or its own (CVB0's passes)."""
    return raw.get("updates_by_variant", {}).get(name, raw["updates"])


def summarize_case(r, threads):
    """Throughputs (median of the repeats) and ratios for one corpus and K."""
    T = {k: v for k, v in r["times"].items()}
    row = {"raw": r, "per": {}}
    for key, secs in T.items():
        name, t = key.split("@")
        t = int(t)
        rates = [variant_updates(r, name) / s for s in secs]
        row["per"][key] = {"seconds": secs, "median_seconds": med(secs), "spread": spread(secs),
                           "per_second": med(rates), "per_second_per_core": med(rates) / t, "threads": t}
    est2 = row["per"].get(f"estep@{threads}")
    est1 = row["per"].get("estep@1")
    roof2 = row["per"].get(f"roofline_axpy32@{threads}")
    roof1 = row["per"].get("roofline_axpy32@1")
    if est2 and roof2:
        row["efficiency"] = est2["per_second"] / roof2["per_second"]
        row["efficiency_runs"] = paired_ratios(roof2, est2)
        row["efficiency_madd"] = 2 * est2["per_second"] / roof2["per_second"]
    if est1 and roof1:
        row["efficiency_1thread"] = est1["per_second"] / roof1["per_second"]
    double2 = row["per"].get(f"estep_double@{threads}")
    row["double_roofline"] = faster(row["per"], "roofline_axpy", threads)
    droof2 = row["per"].get(row["double_roofline"])
    if double2 and droof2:
        row["efficiency_double"] = double2["per_second"] / droof2["per_second"]
    if est1 and est2:
        # per-run pairs are interleaved: the ratio of medians and the spread of per-repeat ratios
        row["thread_speedup"] = est1["median_seconds"] / est2["median_seconds"]
        row["thread_speedup_runs"] = paired_ratios(est1, est2)
    if roof1 and roof2:
        row["roofline_thread_speedup"] = roof1["median_seconds"] / roof2["median_seconds"]
    cvb0, cvb0_roof = row["per"].get(f"cvb0@{threads}"), row["per"].get(faster(row["per"], "roofline_axpy_cvb0", threads))
    if cvb0 and cvb0_roof:
        row["efficiency_cvb0"] = cvb0["per_second"] / cvb0_roof["per_second"]
        row["efficiency_cvb0_runs"] = paired_ratios(cvb0_roof, cvb0)
    return row


def paired_ratios(a, b):
    """a's seconds / b's seconds in each repeat: the repeats interleave the variants, so each pair
    ran minutes apart at most and shares the machine's state (the efficiency when both did the same
    updates)."""
    return [x / y for x, y in zip(a["seconds"], b["seconds"])]


def efficiency_cell(case, key):
    """'62% (59% [36-89%] per repeat)': the ratio of median rates, then the per-repeat ratios."""
    return (f"{100 * case.get(key, float('nan')):.0f}% "
            f"({fmt_percent_runs(case.get(key + '_runs'))} per repeat)")


def faster(per, roofline, threads):
    """The key of the faster of a roofline and its prefetching twin (timed at `threads`), or None."""
    timed = [k for k in (f"{roofline}@{threads}", f"{roofline}_prefetch@{threads}") if k in per]
    return max(timed, key=lambda k: per[k]["per_second"]) if timed else None


def render(r):
    L = []
    s = r["settings"]
    L.append("# E-step kernel: throughput, roofline, threads, profile")
    L.append("")
    L.append(f"Measured {r['date']} by `benchmarks/bench_kernel.py` (`{r['command']}`). "
             f"Machine: {r['machine']['cpu']}, {r['machine']['cores']} cores; load average at start "
             f"{r['machine']['loadavg'][0]:.2f}, at end {r['machine']['loadavg_at_end'][0]:.2f} (other work "
             "was running on the machine: see the spread columns).")
    L.append("")
    L.append(f"Real minibatches: the first {s['docs']} documents of topicscale's epoch-0 order (minibatches of "
             f"{s['batch_size']}), the topic rows the E-step runs on (E[beta], the default `--estep-beta mean`) "
             f"of a model fitted on at most {MAX_DOCS:,} documents with the shared settings and the local step "
             "`fit` picks for a whole pass of the corpus (cvb0 on GCIDE, mean-field on NYT) "
             f"(kappa {s['kappa']}, tau {s['tau']:g}, eta {s['eta']}, alpha 1/K, E-step cap {s['max_iter']}, "
             f"tol {s['tol']}). Every figure is the median of {s['repeats']} interleaved repeats "
             "[min-max in brackets]. An efficiency is the ratio of the median rates; beside it, the ratio "
             "within each repeat (the kernel and its roofline ran minutes apart at most), whose spread "
             "shows how much the machine moved the figure.")
    L.append("")
    L.append("**Updates** = sum over documents of distinct words x sweeps x K (a token-topic update = one "
             "topic of one distinct word in one sweep: the E-step does 2 multiply-adds for it, one in the dot "
             "product phi-normaliser and one in the gamma accumulator). **Roofline** = the same minibatches, "
             "the same word-major topic matrix and the same sweeps per document through a numba "
             "gather-and-multiply-add loop (`kernels_whatif.roofline_axpy`: one gathered row, K multiply-adds "
             "per word and sweep, fastmath; in float64 also with the prefetch CVB0's kernel does, rows 4 words "
             "ahead in the first sweep, and the faster of the two counts); its rate is in multiply-adds/s. "
             "Training runs the E-step in single "
             "precision (float32 topic rows; `fit --precision single`, the default) and is measured against "
             "the float32 roofline; eval and infer run it in double, measured against the float64 roofline.")
    L.append("")
    L.append("| corpus / K | docs | mean distinct words | mean sweeps | V' x K per minibatch (MB, float64) | "
             "E-step single G updates/s/core (2 thr) | roofline float32 G madd/s/core (2 thr) | efficiency single | "
             "E-step double | roofline float64 (the faster) | efficiency double | "
             "single, counting 2 madd per update | 1 thread: single E-step / roofline | "
             "2 vs 1 thread speed-up (single E-step) | roofline float32 2 vs 1 |")
    L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    thr = max(r["cases"][next(iter(r["cases"]))]["raw"]["threads"]) if r["cases"] else 2
    for key, c in r["cases"].items():
        raw = c["raw"]
        per = c["per"]

        def g(name):
            p = per.get(name)
            if not p:
                return "-"
            rates = [variant_updates(raw, name.split("@")[0]) / x / p["threads"] / 1e9 for x in p["seconds"]]
            return fmt_spread(rates, 3)
        pct = lambda key: f"{100 * c.get(key, float('nan')):.0f}%"
        sp = c.get("thread_speedup_runs") or []
        L.append(f"| {key} | {raw['docs']} | {raw['mean_distinct_words']:.1f} | {raw['mean_sweeps']:.1f} | "
                 f"{raw['topic_matrix_mb_per_batch']:.1f} | {g(f'estep@{thr}')} | {g(f'roofline_axpy32@{thr}')} | "
                 f"{efficiency_cell(c, 'efficiency')} | {g(f'estep_double@{thr}')} | "
                 f"{g(c.get('double_roofline') or '-')} | "
                 f"{pct('efficiency_double')} | {pct('efficiency_madd')} | {pct('efficiency_1thread')} | "
                 f"{c.get('thread_speedup', float('nan')):.2f}x ({fmt_spread(sp, 2)} per repeat) | "
                 f"{c.get('roofline_thread_speedup', float('nan')):.2f}x |")
    L.append("")
    L.append("CVB0's document step (`--local cvb0`, the default local step for short documents and many "
             "updates; float64, burn-in 1, so 2 passes over each document's words; 1 token-topic update = one "
             "topic of one distinct word in one pass) against the float64 roofline run with the same 2 passes. "
             "The kernel prefetches the topic rows of the words 4 ahead in its first pass (it waited on "
             "memory for them on GCIDE's vocabulary); the roofline is timed with and without that prefetch, "
             "and the efficiency is against the faster:")
    L.append("")
    L.append(f"| corpus / K | CVB0 G updates/s/core ({thr} thr) | roofline float64, 2 passes | "
             "the same with prefetch | efficiency |")
    L.append("|---|---:|---:|---:|---:|")
    for key, c in r["cases"].items():
        per = c["per"]
        if f"cvb0@{thr}" not in per:
            continue
        rate = lambda n: f"{per[f'{n}@{thr}']['per_second_per_core'] / 1e9:.3f}" if f"{n}@{thr}" in per else "-"
        L.append(f"| {key} | {rate('cvb0')} | {rate('roofline_axpy_cvb0')} | {rate('roofline_axpy_cvb0_prefetch')} | "
                 f"{efficiency_cell(c, 'efficiency_cvb0')} |")
    L.append("")
    L.append("### Where the kernel's time goes (what-if variants, same sweeps, 2 threads; G updates/s/core)")
    L.append("")
    names = ["estep", "estep_double", "sweep_nodigamma", "sweep_fastdigamma", "sweep_lanes8", "sweep_fastmath",
             "sweep_f32", "roofline_fused", "roofline_axpy", "roofline_axpy_prefetch", "roofline_axpy32"]
    desc = {"sweep_lanes8": "fast digamma + 8-lane fixed-order dot product (no fastmath; same result everywhere)",
            "estep": "topicscale MeanField.fit in single precision (what training runs)",
            "estep_double": "topicscale MeanField.fit in double (eval, infer, --precision double)",
            "sweep_nodigamma": "same sweep, exp(E[log theta]) replaced by gamma/sum (no digamma)",
            "sweep_fastdigamma": "same sweep, branch-free exp(digamma) (one division, no loop)",
            "sweep_fastmath": "+ vectorised dot product (fastmath without nnan/ninf)",
            "sweep_f32": "+ float32 topics and accumulators",
            "roofline_fused": "bare arithmetic: dot + division + axpy per word (fastmath)",
            "roofline_axpy": "roofline: gather + axpy per word (fastmath), float64",
            "roofline_axpy_prefetch": "the same, prefetching rows 4 words ahead in the first sweep, float64",
            "roofline_axpy32": "roofline: gather + axpy per word (fastmath), float32"}
    L.append("| variant | " + " | ".join(r["cases"].keys()) + " |")
    L.append("|---|" + "---:|" * len(r["cases"]))
    for n in names:
        cells = []
        for key, c in r["cases"].items():
            p = c["per"].get(f"{n}@{thr}")
            cells.append(f"{p['per_second_per_core'] / 1e9:.3f}" if p else "(not run)")
        L.append(f"| {desc[n]} | " + " | ".join(cells) + " |")
    L.append("")
    if r["anatomy"]:
        L.append("### Anatomy of an SVI minibatch step (in process, the calls `topicscale fit` makes, "
                 f"{s['threads']} threads)")
        L.append("")
        keys = list(r["anatomy"])
        stages = list(next(iter(r["anatomy"].values()))["stage_seconds"])
        L.append("| stage (ms per minibatch) | " + " | ".join(
            f"{k} ({r['anatomy'][k].get('local', 'meanfield')}, V={r['anatomy'][k]['V']}, "
            f"lambda {r['anatomy'][k]['lambda_mb']:.0f} MB)" for k in keys) + " |")
        L.append("|---|" + "---:|" * len(keys))
        for st in stages:
            cells = []
            for k in keys:
                a = r["anatomy"][k]
                ms = 1000 * a["stage_seconds"][st] / a["batches"]
                cells.append(f"{ms:.1f} ({100 * a['stage_seconds'][st] / a['total']:.0f}%)")
            L.append(f"| {st} | " + " | ".join(cells) + " |")
        L.append("| total | " + " | ".join(f"{1000 * r['anatomy'][k]['total'] / r['anatomy'][k]['batches']:.1f}"
                                           for k in keys) + " |")
        L.append("")
    for key, p in r["profiles"].items():
        L.append(f"### py-spy profile of a whole `topicscale fit` ({key}, {MAX_DOCS:,} documents, "
                 f"the local step of a whole pass, {s['threads']} threads)")
        L.append("")
        if "skipped" in p:
            L.append(f"skipped: {p['skipped']}")
            L.append("")
            continue
        fs = p.get("fit_summary", {})
        L.append(f"{p['samples']} samples over {p['wall_seconds']:.1f} s of process wall time "
                 f"(fit train_seconds {fs.get('train_seconds', float('nan')):.2f}); Python frames of the main thread "
                 "(time inside a numba kernel is charged to the Python line that called it).")
        L.append("")
        L.append("| frame (inclusive share of samples, top 25) | share |")
        L.append("|---|---:|")
        for name, share in p["inclusive_top"][:25]:
            L.append(f"| `{name}` | {100 * share:.1f}% |")
        L.append("")
        L.append("| leaf frame (self share, top 12) | share |")
        L.append("|---|---:|")
        for name, share in p["leaf_top"][:12]:
            L.append(f"| `{name}` | {100 * share:.1f}% |")
        L.append("")
    L.append("## Commands")
    L.append("")
    L.append("```")
    for e in r["log"]:
        L.append(f"{e['command']}    # {e['what']}: {e['wall_seconds']:.1f} s")
    L.append("```")
    return "\n".join(L) + "\n"


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpora", default="nyt,gcide")
    ap.add_argument("--topics", default="50,200")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--docs", type=int, default=2000, help="documents (minibatches of 500) timed per run")
    ap.add_argument("--variants", default="", help="only these kernels (e.g. estep,roofline_axpy); default all")
    ap.add_argument("--name", default="kernel", help="stem of the result files (OUT/NAME.md, OUT/NAME.json)")
    ap.add_argument("--anatomy", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--anatomy-batches", type=int, default=20)
    ap.add_argument("--profile", default="nyt:50,gcide:200",
                    help="CORPUS:K pairs to profile with py-spy (comma-separated; empty for none)")
    ap.add_argument("--no-apt", action="store_true")
    ap.add_argument("--cache", default=str(HERE / "cache"))
    ap.add_argument("--work", default=str(HERE / "work"))
    ap.add_argument("--out", default=str(HERE / "results"))
    ap.add_argument("--worker", nargs=2, metavar=("KIND", "SPEC"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if not args.worker:
        args.corpora = [c for c in args.corpora.split(",") if c]
        args.topics = [int(k) for k in args.topics.split(",") if k]
        args.profile = [p for p in args.profile.split(",") if p]
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.worker:
        return run_worker_main(*args.worker)
    try:
        orchestrate(args)
    except BenchError as exc:
        print(f"bench: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
