"""The one driver loop: stream -> local step -> global step -> progress -> held-out evaluation.

Algorithms plug in through `step(batch) -> metrics`; the loop does not change.
"""
import time
from dataclasses import dataclass

from tqdm import tqdm

from .corpus.stream import MinibatchStream, StreamPosition


@dataclass
class RunLimits:
    batch_size: int = 500
    passes: float = 1.0
    max_docs: int = 0          # 0: no limit beyond passes
    time_limit: float = 0.0    # seconds, 0: none
    eval_every: int = 0        # minibatches between held-out evaluations, 0: only at the end


def planned_docs(n_docs, limits):
    total = int(round(limits.passes * n_docs))
    return min(total, limits.max_docs) if limits.max_docs else total


def train(algorithm, corpus, limits, seed, evaluate=None, on_record=None, progress=True,
          start=StreamPosition()):
    """Run `algorithm` over minibatches of `corpus` until passes, max_docs or time_limit.

    evaluate(model) -> dict is called every `eval_every` minibatches and at the end;
    on_record(dict) receives one record per minibatch and per evaluation (metrics.jsonl).
    Returns a summary dict.
    """
    stream = MinibatchStream(corpus, limits.batch_size, seed)
    total = planned_docs(corpus.n_docs, limits)
    record = on_record or (lambda r: None)
    t0 = time.perf_counter()
    train_seconds = 0.0
    docs = batches = 0
    tokens = 0.0
    threads = 0
    last_eval = None
    bar = tqdm(total=total, unit="doc", disable=not progress, dynamic_ncols=True, leave=False)

    def run_eval():
        result = evaluate(algorithm.model)
        record({"event": "eval", "docs": docs, "batches": batches, "step": algorithm.model.step,
                "train_seconds": train_seconds, **result})
        bar.set_postfix(heldout_ll=f"{result['per_word_ll']:.4f}")
        return result

    try:
        for position, batch in stream(start):
            if docs >= total or (limits.time_limit and time.perf_counter() - t0 >= limits.time_limit):
                break
            t_batch = time.perf_counter()
            metrics = algorithm.step(batch)
            dt = time.perf_counter() - t_batch
            train_seconds += dt
            docs += batch.n_docs
            batches += 1
            tokens += batch.n_tokens
            threads = max(threads, metrics.get("threads_used", 0))
            record({"event": "batch", "epoch": position.epoch, "batch": position.batch,
                    "step": algorithm.model.step, "docs": docs, "seconds": dt,
                    "docs_per_s": batch.n_docs / dt if dt else None, **metrics})
            bar.update(batch.n_docs)
            if evaluate and limits.eval_every and batches % limits.eval_every == 0:
                last_eval = run_eval()
        if evaluate and (last_eval is None or batches % max(limits.eval_every, 1)):
            last_eval = run_eval()
    finally:
        bar.close()
    wall = time.perf_counter() - t0
    return {"docs": docs, "batches": batches, "tokens": tokens, "train_seconds": train_seconds,
            "wall_seconds": wall, "docs_per_s": docs / train_seconds if train_seconds else None,
            "tokens_per_s": tokens / train_seconds if train_seconds else None,
            "threads_used": threads, "heldout": last_eval}
