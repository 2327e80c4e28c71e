"""Online HDP against online LDA at equal training time (issue 24; the SVI paper's fig. 11 claim),
per corpus, with gensim's HdpModel and tomotopy's HDPModel beside them, all scored by one evaluator.

    .venv-bench/bin/python benchmarks/bench_hdp.py [--quick] [--corpora nyt,sotu,gcide,debian,pydocs,fortunes]
        [--budgets 10,30] [--threads 1] ...

For each corpus (corpora.py; `debian`, the package descriptions, and `pydocs`, the Python
documentation's paragraphs, are corpora nothing was tuned on; `fortunes`, documents of a dozen
words, is where the HDP's patience was chosen) and each training budget B in --budgets (seconds
of training: `fit --time-limit B`, whose clock starts after every kernel is loaded):
  * LDA (`fit`, its defaults: alpha = 1/K, the default local step) at each K of --lda-topics; the
    K equal to the HDP truncation is the reference for time per document;
  * LDA at each K again with its own stopping rule (`fit` without --time-limit or --heldout: passes
    until a pass stops gaining, then `--polish auto`, as a user runs it), with its own time: a row
    counts for the best LDA of a budget when it trained within 1.05 B;
  * the HDP (`fit --model hdp`, truncation --hdp-topics, omega = 1, alpha its step's default: 0.2
    under CVB0, else 1) with each local step of --variants: `meanfield` (direct-assignment view,
    mean-field on E[beta] under alpha0 E[sigma(V)]), `cvb0` (the same with CVB0; `fit`'s default
    on short documents, as for LDA), `hdp` (the SVI paper's two-level step, T = 15);
  * the direct variants again with their own stopping rule, as the LDA rows above (the two-level
    step is too slow for it), once more with --no-merge (without the merges of repeating topics
    before and after the polish), and at each truncation of --hdp-also-topics;
  * the HDP as `fit --model hdp` runs without --local (its default step and settings), own stop;
  * a fit stopped by its own rule does not depend on the budget: it runs once a corpus and its
    row is repeated under every budget;
  * gensim HdpModel (max_time = B, same truncation, chunksize and schedule) and tomotopy HDPModel
    (Gibbs, train(10) calls until B) in worker processes, when installed and not --no-peers.
Every fit is a fresh process with --threads (1 by default: the comparison stays fair on a shared
machine) after a tiny warm-up fit compiled the numba kernels into the cache.

Scores (one worker, the same held-out documents and split for every model):
  * `own`: document completion with the model's own predictive (LDA: its own local step; HDP: its
    local step under its stick prior); peers have none;
  * `fold-in`: topicscale.evaluate.evaluate_topics on the topics carrying 99% of the model's weight
    (mean-field fold-in, alpha = 1/K', topics fixed): LDA's common protocol, the same for every tool;
  * `Gibbs fold-in`: the same topics by `eval --fold-in gibbs` (collapsed Gibbs sampling of the
    observed half: the posterior predictive the mean-field fold-in approximates);
  * effective topics: how many of the heaviest topics hold 99% of the tokens (lambda - eta; peers:
    their topic counts) and 99% of the stick weight E[sigma_k(V)] (gensim: hdp_to_lda's weights).
Times: train s (the run's train_seconds), documents a second (documents / train s) and the process
CPU seconds (whole process: start-up, kernel loading, final evaluation included), which stay
comparable when other work shares the machine. Writes OUT/hdp.md, OUT/hdp.json and a plot a
corpus, OUT/hdp_CORPUS.png (held-out against training time; needs matplotlib).
"""
import argparse
import datetime as dt
import json
import os
import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
OWN_STOP = ", own stop"          # label suffix of the fits with their own stopping rule
NO_MERGE = ", no merge"          # an HDP's own-stop fit with --no-merge
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from common import (BenchError, child_env, last_json, machine, run, run_worker,  # noqa: E402
                    topicscale_command, versions, write_json)

KAPPA, TAU = 0.7, 64.0           # topicscale's default schedule, also given to gensim
VARIANT_NAMES = {"meanfield": "HDP direct, mean-field", "cvb0": "HDP direct, CVB0",
                 "hdp": "HDP paper (two-level, T=15)", "default": "HDP, fit's default step"}
MASS = 0.99


# ============================================================================ workers
def _docs(corpus):
    import numpy as np
    rows = corpus.rows(np.arange(corpus.n_docs))
    return [(rows.indices[a:b].tolist(), rows.counts[a:b].tolist())
            for a, b in zip(rows.indptr[:-1], rows.indptr[1:])]


def _cpu():
    import resource
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def worker_gensim(spec):
    """gensim HdpModel for spec['budget'] seconds (its max_time), topics and weights saved."""
    import numpy as np
    from gensim.models import HdpModel
    from topicscale.corpus.shards import Corpus
    corpus = Corpus(spec["train"])
    docs = [list(zip(ids, counts)) for ids, counts in _docs(corpus)]
    rng = np.random.default_rng(spec["seed"])
    docs = [docs[i] for i in rng.permutation(len(docs))]
    c0, t0 = _cpu(), time.perf_counter()
    hdp = HdpModel(docs, dict(enumerate(corpus.vocab)), max_time=spec["budget"], chunksize=spec["batch_size"],
                   kappa=KAPPA, tau=TAU, K=15, T=spec["topics"], alpha=1, gamma=1, eta=0.01,
                   random_state=spec["seed"])
    train, cpu = time.perf_counter() - t0, _cpu() - c0
    weights, _ = hdp.hdp_to_lda()
    np.save(spec["topics_out"], hdp.get_topics().astype(np.float64))
    np.save(spec["weights_out"], np.asarray(weights, dtype=np.float64))
    np.save(spec["tokens_out"], np.asarray(hdp.m_lambda_sum, dtype=np.float64) - hdp.m_eta * corpus.n_words)
    return {"train_seconds": train, "train_cpu_seconds": cpu, "docs": int(hdp.m_num_docs_processed)}


def worker_tomotopy(spec):
    """tomotopy HDPModel (collapsed Gibbs) trained 10 iterations at a time until spec['budget']
    seconds; its live topics, their token counts as weights."""
    import numpy as np
    import tomotopy as tp
    from topicscale.corpus.shards import Corpus
    corpus = Corpus(spec["train"])
    vocab = corpus.vocab
    mdl = tp.HDPModel(tw=tp.TermWeight.ONE, min_cf=0, min_df=0, rm_top=0, initial_k=10, alpha=1.0, eta=0.01,
                      gamma=1.0, seed=spec["seed"])
    for ids, counts in _docs(corpus):                # not timed: corpus conversion
        words = [vocab[w] for w, c in zip(ids, counts) for _ in range(int(c))]
        if words:
            mdl.add_doc(words)
    c0, elapsed, iterations = _cpu(), 0.0, 0
    while elapsed < spec["budget"]:
        t0 = time.perf_counter()
        mdl.train(10, workers=spec["threads"])
        elapsed += time.perf_counter() - t0
        iterations += 10
    cpu = _cpu() - c0
    column = {w: i for i, w in enumerate(vocab)}
    used = [column[w] for w in mdl.used_vocabs]
    live = [k for k in range(mdl.k) if mdl.is_live_topic(k)]
    beta = np.empty((len(live), len(vocab)))
    for i, k in enumerate(live):
        row = np.asarray(mdl.get_topic_word_dist(k), dtype=np.float64)
        beta[i, :] = row.min()                       # words absent from training: the eta-only value
        beta[i, used] = row
    counts = np.asarray(mdl.get_count_by_topics(), dtype=np.float64)[live]
    np.save(spec["topics_out"], beta / beta.sum(axis=1, keepdims=True))
    np.save(spec["weights_out"], counts)
    np.save(spec["tokens_out"], counts)
    return {"train_seconds": elapsed, "train_cpu_seconds": cpu, "iterations": iterations,
            "docs": iterations * len(mdl.docs), "live_topics": len(live)}


def worker_score(spec):
    """For every entry: topicscale models (folder) or peer matrices (topics, weights, tokens .npy):
    the topics carrying 99% of the weight, their fold-in score and both effective counts; and the
    own predictive of topicscale models (`eval --fold-in own`)."""
    import numba
    import numpy as np
    from topicscale.corpus.shards import Corpus
    from topicscale.evaluate import evaluate_model, evaluate_topics
    from topicscale.models import load_model
    from topicscale.models.hdp import carrying
    numba.set_num_threads(min(spec["threads"], numba.config.NUMBA_NUM_THREADS))
    out = {}
    for name, entry in spec["entries"].items():
        held = Corpus(entry["heldout"])
        if "folder" in entry:
            m = load_model(entry["folder"])
            weights, tokens = m.topic_weights(), m.token_weights()
            shown = m.display_order(False)
            beta = m.expected_beta()[:, shown].T
            own = evaluate_model(m, held, fold_in="own")["per_word_ll"]
        else:
            beta, weights, tokens = (np.load(entry[k]) for k in ("topics", "weights", "tokens"))
            shown = np.argsort(-weights, kind="stable")[:carrying(weights, MASS)]
            beta, own = beta[shown], None
        beta = beta / beta.sum(axis=1, keepdims=True)
        out[name] = {"foldin_per_word_ll": evaluate_topics(beta, held)["per_word_ll"], "own_per_word_ll": own,
                     "gibbs_per_word_ll": evaluate_topics(beta, held, fold_in="gibbs")["per_word_ll"],
                     "effective_tokens_99": carrying(np.maximum(tokens, 0), MASS),
                     "effective_weight_99": carrying(weights, MASS), "exported_topics": int(len(shown))}
    return out


def worker_info(spec):
    return versions()


def worker_main(kind, spec_path):
    spec = json.loads(Path(spec_path).read_text())
    result = {"gensim": worker_gensim, "tomotopy": worker_tomotopy, "score": worker_score,
              "info": worker_info}[kind](spec)
    Path(spec["result_out"]).write_text(json.dumps(result))
    return 0


# ============================================================================ orchestrator
def num(x):
    return repr(int(x)) if float(x) == int(x) else repr(float(x))


def peer_available(env, module, log):
    try:
        run([sys.executable, "-c", f"import {module}"], env, f"check {module}", log)
        return True
    except BenchError:
        return False


def fit_topicscale(ts, corpus, label, opts, budget, args, env, work, log, own_stop=False):
    """One fit: `--time-limit budget`, or with own_stop the fit's own stopping rule."""
    folder = work / f"hdp-bench-{corpus['name']}-{label.replace(' ', '-')}-{num(budget)}"
    if folder.exists():
        shutil.rmtree(folder)
    load = os.getloadavg()[0]
    limit = [] if own_stop else ["--time-limit", num(budget), "--heldout", corpus["heldout"]]
    text, wall = run(ts + ["fit", corpus["train"]] + opts + limit +
                     ["--batch-size", str(args.batch_size), "--seed", str(args.seed),
                      "--threads", str(args.threads), "--quiet", "--json",
                      "--force", "-o", folder], env, f"{corpus['name']} {label} ({num(budget)} s)", log)
    s = last_json(text, "fit")
    return {"train_seconds": s["train_seconds"], "docs": s["docs"], "local": s.get("local"),
            "process_wall_seconds": wall, "process_cpu_seconds": log[-1]["cpu_seconds"],
            "loadavg_before": load, "folder": str(folder)}


def orchestrate(args):
    from corpora import prepare_all
    work, out_dir = Path(args.work), Path(args.out)
    work.mkdir(parents=True, exist_ok=True)
    log, runs = [], []
    started = time.perf_counter()
    env = child_env(args.threads, work / "numba-cache-hdp")
    ts = topicscale_command()
    corpora, skipped = prepare_all(args.corpora, work, args.cache, env, log)
    info = run_worker(__file__, "info", {"tag": "hdp-info"}, work, env, log)
    peers = [p for p in args.peers if peer_available(env, p, log)]
    first = next(iter(corpora.values()))
    for local in ["meanfield", "cvb0"] + (["hdp"] if "hdp" in args.variants else []):   # compile, not measured
        run(ts + ["fit", first["train"], "--model", "hdp", "--local", local, "-k", "10", "--max-docs", "200",
                  "--batch-size", "100", "--heldout", first["heldout"], "--threads", str(args.threads), "--quiet",
                  "--json", "--force", "-o", work / f"hdp-bench-warmup-{local}"], env, f"warm-up {local}", log)
    entries, same_as = {}, {}          # same_as: an own-stop row's key -> its first budget's
    for name, corpus in corpora.items():
        own_stop_runs = {}
        for budget in args.budgets:
            plan = [("lda", f"K={K}", ["-k", str(K)]) for K in args.lda_topics]
            plan += [("lda", f"K={K}{OWN_STOP}", ["-k", str(K)]) for K in args.lda_topics]
            plan += [("hdp", v, ["--model", "hdp", "--local", v, "-k", str(args.hdp_topics)]) for v in args.variants]
            plan += [("hdp", f"{v}{suffix}{OWN_STOP}", ["--model", "hdp", "--local", v, "-k", str(args.hdp_topics)]
                      + (["--no-merge"] if suffix else []))
                     for v in args.variants if v != "hdp" for suffix in ("", NO_MERGE)]
            plan += [("hdp", f"{v}, K={K}{OWN_STOP}", ["--model", "hdp", "--local", v, "-k", str(K)])
                     for K in args.hdp_also_topics for v in args.variants if v != "hdp"]
            plan += [("hdp", f"default{OWN_STOP}", ["--model", "hdp", "-k", str(args.hdp_topics)])]
            for model, label, opts in plan:
                key = f"{name}-{model}-{label}-{budget}"
                if label in own_stop_runs:      # stopped by its own rule: the same fit at every budget
                    first_key, first = own_stop_runs[label]
                    runs.append(dict(first, budget=budget))
                    same_as[key] = first_key
                    continue
                r = fit_topicscale(ts, corpus, f"{model}-{label}", opts, budget, args, env, work, log,
                                   own_stop=label.endswith(OWN_STOP))
                r.update(corpus=name, budget=budget, model=model, label=label)
                runs.append(r)
                entries[key] = {"folder": r["folder"], "heldout": corpus["heldout"]}
                if label.endswith(OWN_STOP):
                    own_stop_runs[label] = (key, r)
            for peer in peers:
                tag = f"hdp-{peer}-{name}-{num(budget)}"
                files = {k: str(work / f"{tag}-{k}.npy") for k in ("topics", "weights", "tokens")}
                load = os.getloadavg()[0]
                g = run_worker(__file__, peer, {"tag": tag, "train": corpus["train"], "budget": budget,
                                                "batch_size": args.batch_size, "topics": args.hdp_topics,
                                                "seed": args.seed, "threads": args.threads,
                                                **{f"{k}_out": v for k, v in files.items()}},
                               work, env, log, what=f"{name} {peer} HDP ({num(budget)} s)")
                runs.append(dict(g, corpus=name, budget=budget, model=peer, label="HDP", loadavg_before=load))
                entries[f"{name}-{peer}-HDP-{budget}"] = dict(files, heldout=corpus["heldout"])
    scores = run_worker(__file__, "score", {"tag": "hdp-score", "entries": entries, "threads": args.threads},
                        work, env, log, what="scores")
    for r in runs:
        key = f"{r['corpus']}-{r['model']}-{r['label']}-{r['budget']}"
        r.update(scores[same_as.get(key, key)])
        r["docs_per_second"] = r["docs"] / r["train_seconds"] if r["train_seconds"] else None
    result = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
              "command": " ".join([Path(sys.executable).name] + sys.argv), "machine": machine(),
              "versions": info, "corpora": corpora, "skipped": skipped, "peers": peers,
              "settings": {k: v for k, v in vars(args).items() if k != "worker"}, "runs": runs,
              "bench_wall_seconds": time.perf_counter() - started, "log": log}
    out_dir.mkdir(parents=True, exist_ok=True)
    result["plots"] = {name: plot_corpus(result, name, out_dir / f"hdp_{name}.png") for name in corpora}
    write_json(out_dir / "hdp.json", result)
    md = render(result)
    (out_dir / "hdp.md").write_text(md)
    print(md)
    return 0


# ============================================================================ report
def fmt(x, digits=4):
    return "-" if x is None else f"{x:.{digits}f}"


def render(r):
    s, m = r["settings"], r["machine"]
    L = ["# Online HDP vs LDA at equal training time (issue 24; SVI paper, fig. 11)", "",
         f"Measured {r['date']} by `benchmarks/bench_hdp.py{' --quick' if s['quick'] else ''}` in "
         f"{r['bench_wall_seconds'] / 60:.1f} minutes on {m['cpu']} ({m['cores_available']} cores available), "
         f"{s['threads']} thread(s) per run; load average (1 min) at the end {m['loadavg'][0]:.1f} (see the load "
         f"column: with other work on the machine compare CPU seconds). Commit {m['source']['commit']}.", "",
         f"Every run: minibatches of {s['batch_size']}, seed {s['seed']}, `fit --time-limit B` (training only; "
         f"kernels loaded before the clock starts), but the `own stop` rows: `fit` as a user runs it, "
         f"stopping by its own rule (its time shown; an LDA row counts for the best LDA when within 1.05 B). "
         f"LDA at its defaults (alpha = 1/K, its default local step); "
         f"HDP truncation K = {s['hdp_topics']}, omega = 1, alpha its step's default (0.2 under CVB0, else 1), "
         f"eta = 0.01, one setting on every corpus. "
         f"Peers: {', '.join(r['peers']) or 'none'}" + (f"; skipped corpora: {r['skipped']}" if r["skipped"] else "")
         + ".", ""]
    for name, c in r["corpora"].items():
        L += [f"## {name}: {c['description']}", "",
              f"{c['train_docs']} training documents ({c['train_tokens']} tokens, {c['vocabulary']} words, "
              f"{c['mean_distinct_words']:.0f} distinct words a document), {c['heldout_docs']} held-out.", ""]
        if r.get("plots", {}).get(name):
            L += [f"![{name}: held-out against training time]({r['plots'][name]})", ""]
        for budget in s["budgets"]:
            rows = [x for x in r["runs"] if x["corpus"] == name and x["budget"] == budget]
            L += [f"### {num(budget)} s of training", "",
                  "| model | setting | own LL | fold-in LL | Gibbs fold-in LL | topics for 99% tokens / 99% weight "
                  "| train s | docs / s | process CPU s (wall) | load |", "|---|---|---:|---:|---:|---|---:|---:|---|---:|"]
            for x in rows:
                what = {"lda": "LDA", "hdp": variant_name(x["label"]),
                        "gensim": "gensim HdpModel", "tomotopy": "tomotopy HDPModel"}[x["model"]]
                shows_step = x["model"] == "lda" or x["label"].startswith("default")
                setting = x["label"] + (f" ({x['local']})" if x.get("local") and shows_step else "")
                L.append(f"| {what} | {setting} | {fmt(x['own_per_word_ll'])} | {fmt(x['foldin_per_word_ll'])} | "
                         f"{fmt(x['gibbs_per_word_ll'])} | "
                         f"{x['effective_tokens_99']} / {x['effective_weight_99']} | {x['train_seconds']:.1f} | "
                         f"{x['docs_per_second']:,.0f} | {x['process_cpu_seconds']:.1f} ({x['process_wall_seconds']:.1f}) "
                         f"| {x['loadavg_before']:.1f} |")
            L += ["", verdict(rows, s), ""]
    L += ["* **own LL**: `eval --fold-in own` (document completion, SVI paper sec. 4): the model's own local step "
          "and prior on half of each held-out document's distinct words, the other half scored; per token.",
          "* **fold-in LL**: `evaluate_topics` on the topics carrying 99% of the weight (LDA: all), mean-field "
          "fold-in with alpha = 1/K' and the topics fixed: LDA's common protocol, the same for every tool.",
          "* **Gibbs fold-in LL**: the same topics and alpha by `eval --fold-in gibbs`, collapsed Gibbs sampling "
          "of the observed half: the posterior predictive the mean-field fold-in approximates.",
          "* **topics for 99%**: the heaviest topics holding 99% of the tokens (lambda - eta; tomotopy: its "
          "counts; gensim: its lambda sums) / of the stick weight E[sigma_k(V)] (gensim: hdp_to_lda; LDA: tokens).",
          "* **docs / s**: documents processed per second of training; **process CPU s**: the whole process.", ""]
    return "\n".join(L) + "\n"


def plot_corpus(r, name, path):
    """Held-out per-word LL (own; the common fold-in) against training seconds for every run on
    corpus `name`: LDA at each K (open: --time-limit, filled: own stop), each HDP variant, the
    peers (fold-in only). Returns the file name, or None without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    first_budget = r["settings"]["budgets"][0]      # an own-stop row repeats under every budget
    rows = [x for x in r["runs"] if x["corpus"] == name
            and (x["budget"] == first_budget or not x["label"].endswith(OWN_STOP))]
    markers = {"meanfield": "^", "cvb0": "s", "hdp": "D", "default": "*", "gensim": "x", "tomotopy": "+"}
    fig, axes = plt.subplots(1, 2, figsize=(13.5, 4.4), sharex=True)
    for ax, key, title in ((axes[0], "own_per_word_ll", "own predictive"),
                           (axes[1], "foldin_per_word_ll", "common fold-in of the exported topics")):
        lda = sorted((x for x in rows if x["model"] == "lda" and x.get(key) is not None),
                     key=lambda x: x["train_seconds"])
        for own_stop in (False, True):
            pts = [x for x in lda if x["label"].endswith(OWN_STOP) == own_stop]
            ax.scatter([x["train_seconds"] for x in pts], [x[key] for x in pts], s=30, color="tab:blue",
                       facecolors="tab:blue" if own_stop else "none",
                       label="LDA, own stop" if own_stop else "LDA, --time-limit")
            for x in pts:
                ax.annotate(x["label"].split(",")[0], (x["train_seconds"], x[key]), fontsize=7,
                            xytext=(3, 3), textcoords="offset points")
        for x in rows:
            if x["model"] == "lda" or x.get(key) is None:
                continue
            base = x["label"].split(",")[0] if x["model"] == "hdp" else x["model"]
            own_stop = x["label"].endswith(OWN_STOP)
            ax.scatter([x["train_seconds"]], [x[key]], marker=markers.get(base, "o"), s=45,
                       color="tab:red" if x["model"] == "hdp" else "tab:gray",
                       facecolors=("tab:red" if own_stop else "none") if x["model"] == "hdp" else None,
                       label=variant_name(x["label"]) if x["model"] == "hdp" else f"{x['model']} HDP")
            if ", K=" in x["label"]:                # a row at another truncation (--hdp-also-topics)
                ax.annotate(x["label"].split(", ")[1], (x["train_seconds"], x[key]), fontsize=7,
                            color="tab:red", xytext=(3, -9), textcoords="offset points")
        ax.set_xscale("log")
        ax.set_xlabel("training seconds (log scale)")
        ax.set_title(title, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("held-out per-word log likelihood")
    handles, labels = axes[1].get_legend_handles_labels()
    by_label = dict(zip(labels, handles))           # one entry a kind of run, not one a budget
    axes[1].legend(by_label.values(), by_label.keys(), fontsize=7, loc="center left", bbox_to_anchor=(1.02, 0.5))
    fig.suptitle(f"{name}: HDP and LDA against training time")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path).name


def variant_name(label):
    """'cvb0, own stop' -> 'HDP direct, CVB0, own stop'."""
    base = label.split(",")[0]
    return VARIANT_NAMES.get(base, base) + label[len(base):]


def verdict(rows, s):
    """Where the paper's claim holds: each HDP variant against the best LDA by each score (a
    variant stopped by its own rule: the best LDA of any row trained within its time), and the
    time per document of the budget's rows against LDA at K = the truncation (an own-stop row's
    time includes its polish sweeps, which process no minibatch)."""
    lda = [x for x in rows if x["model"] == "lda"]
    if not lda:
        return ""

    def best(pool):
        return tuple(max(pool, key=lambda x: x[key]) for key in ("foldin_per_word_ll", "own_per_word_ll",
                                                                 "gibbs_per_word_ll"))

    best_fold, best_own, best_gibbs = best([x for x in lda if not x["label"].endswith(OWN_STOP)
                                            or x["train_seconds"] <= 1.05 * x["budget"]])
    same_k = next((x for x in lda if x["label"] == f"K={s['hdp_topics']}"), None)
    out = [f"Best LDA: fold-in {best_fold['foldin_per_word_ll']:.4f} ({best_fold['label']}), own "
           f"{best_own['own_per_word_ll']:.4f} ({best_own['label']}), Gibbs fold-in "
           f"{best_gibbs['gibbs_per_word_ll']:.4f} ({best_gibbs['label']})."]
    for x in rows:
        if x["model"] == "lda":
            continue
        fold, own, gibbs = best_fold, best_own, best_gibbs
        text = variant_name(x["label"]) if x["model"] == "hdp" else x["model"]
        if x["label"].endswith(OWN_STOP):
            fold, own, gibbs = best([y for y in lda if y["train_seconds"] <= 1.05 * x["train_seconds"]])
            text += (f" ({x['train_seconds']:.0f} s; the best LDA within that: {fold['label']} by fold-in, "
                     f"{own['label']} by own, {gibbs['label']} by Gibbs fold-in)")
        text += (f": fold-in {x['foldin_per_word_ll'] - fold['foldin_per_word_ll']:+.4f}, Gibbs fold-in "
                 f"{x['gibbs_per_word_ll'] - gibbs['gibbs_per_word_ll']:+.4f}")
        if x["own_per_word_ll"] is not None:
            text += f", own {x['own_per_word_ll'] - own['own_per_word_ll']:+.4f}"
        if same_k and x["model"] == "hdp" and x["docs_per_second"] and not x["label"].endswith(OWN_STOP):
            text += f", time a document {same_k['docs_per_second'] / x['docs_per_second']:.1f}x LDA K={s['hdp_topics']}'s"
        out.append(text + ".")
    return " ".join(out)


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="test the machinery: nyt and sotu, 2 s budgets, LDA K = 25 and 100, every variant and peer")
    ap.add_argument("--corpora", default="nyt,sotu,gcide,debian,pydocs,fortunes")
    ap.add_argument("--budgets", default="10,30", help="seconds of training, comma-separated")
    ap.add_argument("--lda-topics", default="25,50,100,200")
    ap.add_argument("--hdp-topics", type=int, default=100, help="HDP corpus truncation K (fit's default)")
    ap.add_argument("--hdp-also-topics", default="150",
                    help="other truncations, comma-separated: own-stop rows of each direct variant")
    ap.add_argument("--variants", default="meanfield,cvb0,hdp", help="HDP local steps: meanfield, cvb0, hdp")
    ap.add_argument("--peers", default="gensim,tomotopy")
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--batch-size", type=int, default=500)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cache", default=str(HERE / "cache"))
    ap.add_argument("--work", default=str(HERE / "work"))
    ap.add_argument("--out", default=None, help="default: results/, with --quick results-quick/")
    ap.add_argument("--worker", nargs=2, metavar=("KIND", "SPEC"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.out = args.out or str(HERE / ("results-quick" if args.quick else "results"))
    if args.quick:
        args.corpora, args.budgets, args.lda_topics = "nyt,sotu", "2", "25,100"
    args.corpora = [c for c in args.corpora.split(",") if c]
    args.budgets = [float(b) for b in args.budgets.split(",") if b]
    args.lda_topics = [int(k) for k in args.lda_topics.split(",") if k]
    args.hdp_also_topics = [int(k) for k in args.hdp_also_topics.split(",") if k]
    args.variants = [v for v in args.variants.split(",") if v]
    args.peers = [] if args.no_peers else [p for p in args.peers.split(",") if p]
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.worker:
        return worker_main(*args.worker)
    unknown = set(args.variants) - set(VARIANT_NAMES)
    if unknown:
        print(f"bench: unknown variant(s) {sorted(unknown)}; choose from {sorted(VARIANT_NAMES)}", file=sys.stderr)
        return 2
    try:
        return orchestrate(args)
    except BenchError as exc:
        print(f"bench: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
