"""A fit killed at any point continues with `topicscale fit --resume OUT` and nothing else, to the
model an uninterrupted run writes: the folder's lock is a flock the kernel releases, never stale."""
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from clirun import run, run_stopped
from synthetic import lda_documents, planted_topics, write_corpus

ROOT = Path(__file__).resolve().parent.parent
ENV = dict(os.environ, PYTHONPATH=str(ROOT))
FIT = ["--topics", "4", "--batch-size", "10", "--passes", "3", "--seed", "11", "--checkpoint-every", "1"]
STEPS = 36                  # 120 documents, 10 a minibatch, 3 passes
# Runs `topicscale.cli.main(ARGS)` with os.replace (atomic_file's rename) wrapped: at the N-th
# rename onto a file called NAME the process SIGKILLs itself before or after renaming, or
# SIGSTOPs itself after renaming (a live fit that holds its lock), or sleeps after each (slow).
CHILD = textwrap.dedent("""
    import os, signal, sys, time
    name, n, when = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    real_replace, seen = os.replace, [0]

    def replace(src, dst, *args, **kwargs):
        if os.path.basename(os.fspath(dst)) != name:
            return real_replace(src, dst, *args, **kwargs)
        seen[0] += 1
        if seen[0] == n and when == "before":
            os.kill(os.getpid(), signal.SIGKILL)
        real_replace(src, dst, *args, **kwargs)
        if seen[0] == n and when == "after":
            os.kill(os.getpid(), signal.SIGKILL)
        if seen[0] == n and when == "stop":
            os.kill(os.getpid(), signal.SIGSTOP)
        if when == "slow":
            time.sleep(0.01)

    os.replace = replace
    from topicscale.cli import main
    main(sys.argv[4:])
""")



@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    rng = np.random.default_rng(7)
    beta = planted_topics(4, 60, rng)
    return write_corpus(tmp_path_factory.mktemp("tiny") / "corpus",
                        lda_documents(beta, 120, 30, 0.3, rng), 60, shard_docs=50)


@pytest.fixture(scope="module")
def whole(tiny, tmp_path_factory):
    """An uninterrupted run with the same seed."""
    out = tmp_path_factory.mktemp("whole") / "model"
    run("fit", tiny.path, *FIT, "-o", out)
    return out


def child(tiny, out, name="checkpoint.npz", n=0, when="never", extra=()):
    args = ["fit", str(tiny.path), *FIT, *extra, "-o", str(out)]
    return subprocess.Popen([sys.executable, "-c", CHILD, name, str(n), when, *args], env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def killed(proc):
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGKILL, err


def checkpoint_step(out):
    with np.load(out / "checkpoint.npz") as z:
        return json.loads(z["meta"].tobytes())["step"]


def batch_steps(out):
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return [r["step"] for r in records if r["event"] == "batch"]


def lock_holder(out):
    """None if no process holds the folder's flock, else the lock file's text."""
    fd = os.open(out / ".lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return None
    except BlockingIOError:
        return (out / ".lock").read_text()
    finally:
        os.close(fd)


def assert_resumes_to_the_same_model(out, whole, step, resume_cmd=None):
    """`fit --resume OUT`, no other step first: it continues at `step` and ends with `whole`'s
    model, byte for byte, no minibatch logged twice, the lock file left in place and free."""
    assert (out / ".lock").exists() and lock_holder(out) is None
    if resume_cmd:
        r = subprocess.run(resume_cmd, env=ENV, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        said = r.stderr
    else:
        said = run("fit", "--resume", out).output
    assert f"resuming {out} at epoch" in said and f"(step {step}," in said
    assert (out / "model.npz").read_bytes() == (whole / "model.npz").read_bytes()
    assert batch_steps(out) == batch_steps(whole) == list(range(1, STEPS + 1))
    assert not (out / "checkpoint.npz").exists()
    assert not list(out.glob(".*.tmp"))                 # a killed write's temporary file is cleared
    assert (out / ".lock").exists() and lock_holder(out) is None


def test_sigkill_during_training_then_resume_alone(tiny, whole, tmp_path):
    """Killed from outside mid-run (a real `python -m topicscale fit`, slowed a little so the
    kill lands mid-run), then `python -m topicscale fit --resume OUT`, as a cron job would."""
    out = tmp_path / "model"
    proc = child(tiny, out, when="slow")
    log = out / ".run.jsonl"
    deadline = time.time() + 60
    while not (log.exists() and log.read_text().count('"event": "batch"') >= 10):
        assert proc.poll() is None and time.time() < deadline, proc.communicate()
        time.sleep(0.005)
    proc.kill()
    killed(proc)
    step = checkpoint_step(out)
    assert 0 < step < STEPS
    assert_resumes_to_the_same_model(out, whole, step,
                                     [sys.executable, "-m", "topicscale", "fit", "--resume", str(out)])


def test_python_m_topicscale_runs_fit(tiny, whole, tmp_path):
    out = tmp_path / "model"
    r = subprocess.run([sys.executable, "-m", "topicscale", "fit", str(tiny.path), *FIT, "-o", str(out)],
                       env=ENV, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and f"wrote {out}" in r.stdout, r.stderr
    assert (out / "model.npz").read_bytes() == (whole / "model.npz").read_bytes()


@pytest.mark.parametrize("name, n, when, step", [
    ("checkpoint.npz", 2, "before", 0),         # the first minibatch's checkpoint, not yet renamed
    ("checkpoint.npz", 15, "before", 13),       # mid-run: temporary file written, not renamed
    ("checkpoint.npz", 2, "after", 1),          # right after the rename
    ("checkpoint.npz", 15, "after", 14),
    ("checkpoint.npz", STEPS + 1, "after", STEPS),  # the last checkpoint, before the model
    ("model.npz", 1, "before", STEPS),          # the model's temporary file written, not renamed
    ("model.npz", 1, "after", STEPS),           # the model in place, metrics not yet published
])
def test_sigkill_around_a_rename_then_resume_alone(tiny, whole, tmp_path, name, n, when, step):
    """Checkpoint k is renamed into place at the k-th rename onto checkpoint.npz (the first
    holds step 0); a kill before it leaves checkpoint k-1, after it checkpoint k."""
    out = tmp_path / "model"
    killed(child(tiny, out, name, n, when))
    assert checkpoint_step(out) == step
    assert_resumes_to_the_same_model(out, whole, step)


def wait_stopped(proc, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        pid, status = os.waitpid(proc.pid, os.WNOHANG | os.WUNTRACED)
        if pid:
            assert os.WIFSTOPPED(status), f"the fit ended before it was stopped: status {status}"
            return
        time.sleep(0.01)
    raise AssertionError("the fit was not stopped in time")


def test_a_live_fit_keeps_others_out_until_it_dies(tiny, whole, tmp_path):
    """A fit stopped (SIGSTOP) mid-run still holds the lock: a resume and a --force fit are
    refused with its pid and host, and write nothing; once it is SIGKILLed, --resume proceeds."""
    out = tmp_path / "model"
    proc = child(tiny, out, n=20, when="stop")
    try:
        wait_stopped(proc)
        before = {p.name: p.read_bytes() for p in out.iterdir()}
        assert json.loads(lock_holder(out)) == {"pid": proc.pid, "host": socket.gethostname()}
        holder = f"{out} is being written by another fit (pid {proc.pid} on {socket.gethostname()})"
        for args in (["--resume", out], [tiny.path, *FIT, "--force", "-o", out]):
            r = run("fit", *args, ok=False)
            assert r.exit_code == 2 and holder in r.output
            assert len(r.output.strip().splitlines()) == 1
        assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    finally:
        proc.kill()
    killed(proc)
    assert_resumes_to_the_same_model(out, whole, 19)


def test_a_held_lock_with_an_unreadable_file_is_still_refused(tiny, whole, tmp_path):
    """Another process holds the flock but its file says nothing useful: refused, saying so;
    once that process is gone the fit runs and the file names the new holder."""
    out = tmp_path / "model"
    out.mkdir()
    (out / ".lock").write_text("not json, and longer than the pid and host that replace it " * 4)
    hold = ("import fcntl, os, sys, time\n"
            "fd = os.open(sys.argv[1], os.O_RDWR)\n"
            "fcntl.flock(fd, fcntl.LOCK_EX)\n"
            "print('held', flush=True)\n"
            "time.sleep(600)\n")
    proc = subprocess.Popen([sys.executable, "-c", hold, str(out / ".lock")], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == "held\n"
        r = run("fit", tiny.path, *FIT, "-o", out, ok=False)
        assert r.exit_code == 2 and f"{out} is being written by another fit" in r.output
        assert "unreadable" in r.output
    finally:
        proc.kill()
        proc.communicate()
    run("fit", tiny.path, *FIT, "-o", out)
    assert json.loads((out / ".lock").read_text()) == {"pid": os.getpid(), "host": socket.gethostname()}
    assert (out / "model.npz").read_bytes() == (whole / "model.npz").read_bytes()


def test_the_lock_file_stays_after_a_finished_run_and_later_runs_work(tiny, whole, tmp_path):
    """A finished run leaves .lock (free, naming its last holder); a --force fit, a killed one
    and its --resume all go through it."""
    assert lock_holder(whole) is None
    assert json.loads((whole / ".lock").read_text()) == {"pid": os.getpid(), "host": socket.gethostname()}
    out = tmp_path / "model"
    shutil.copytree(whole, out)
    run("fit", tiny.path, *FIT, "--force", "-o", out)
    assert (out / "model.npz").read_bytes() == (whole / "model.npz").read_bytes()
    assert lock_holder(out) is None
    killed(child(tiny, out, n=10, when="after", extra=["--force"]))
    assert json.loads((out / ".lock").read_text())["pid"] != os.getpid()    # the killed child's
    assert_resumes_to_the_same_model(out, whole, 9)


def test_resume_refuses_a_corpus_changed_since_the_run_started(tiny, tmp_path, monkeypatch):
    """A corpus rewritten after the run stopped (another vocabulary; the same vocabulary and fewer
    documents) is refused on resume: exit 2, one line naming it and what changed, the checkpoint
    as it was. Restored, the run resumes; so does a checkpoint that records no fingerprint (an
    older topicscale's)."""
    from topicscale.models import store
    corpus, out = tmp_path / "corpus", tmp_path / "model"
    shutil.copytree(tiny.path, corpus)
    r, _ = run_stopped(monkeypatch, 10, "fit", corpus, *FIT, "--threads", "1", "-o", out)
    assert r.exit_code == 0 and "partial model" in r.output
    saved = (out / "checkpoint.npz").read_bytes()
    rng = np.random.default_rng(3)
    for n_words, n_docs, changed in ((80, 120, "(vocabulary 60 -> 80 words, non-zeros"),
                                     (60, 100, "(documents 120 -> 100, non-zeros")):
        shutil.rmtree(corpus)
        write_corpus(corpus, lda_documents(planted_topics(4, n_words, rng), n_docs, 30, 0.3, rng), n_words)
        r = run("fit", "--resume", out, "--threads", "1", ok=False)
        assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1, r.output
        assert f"the corpus {corpus} is not the one this run started on {changed}" in r.output
        assert (out / "checkpoint.npz").read_bytes() == saved
    shutil.rmtree(corpus)
    shutil.copytree(tiny.path, corpus)
    meta, arrays, vocab = store.load(out, filename="checkpoint.npz")
    del meta["run"]["corpus"]
    store.save(out, meta, arrays, vocab, filename="checkpoint.npz")
    assert "resuming" in run("fit", "--resume", out, "--threads", "1").output
    assert batch_steps(out) == list(range(1, STEPS + 1)) and not (out / "checkpoint.npz").exists()


def test_resume_refuses_a_heldout_corpus_changed_since_the_run_started(tiny, tmp_path, monkeypatch):
    """The --heldout corpus scored every few minibatches is checked as the training corpus is (a
    checkpoint that records no fingerprint of it, an older topicscale's, is not)."""
    from topicscale.models import store
    held, out = tmp_path / "held", tmp_path / "model"
    shutil.copytree(tiny.path, held)
    r, _ = run_stopped(monkeypatch, 10, "fit", tiny.path, *FIT, "--heldout", held, "--eval-every", 4,
                       "--threads", "1", "-o", out)
    assert r.exit_code == 0 and "partial model" in r.output
    saved = (out / "checkpoint.npz").read_bytes()
    shutil.rmtree(held)
    rng = np.random.default_rng(4)
    write_corpus(held, lda_documents(planted_topics(4, 60, rng), 50, 30, 0.3, rng), 60)
    r = run("fit", "--resume", out, "--threads", "1", ok=False)
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1, r.output
    assert f"the held-out corpus {held} is not the one this run started on (documents " in r.output
    assert (out / "checkpoint.npz").read_bytes() == saved
    meta, arrays, vocab = store.load(out, filename="checkpoint.npz")
    del meta["run"]["heldout"]                           # an older topicscale's checkpoint: not checked
    store.save(out, meta, arrays, vocab, filename="checkpoint.npz")
    assert "resuming" in run("fit", "--resume", out, "--threads", "1").output
