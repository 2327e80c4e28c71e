"""fit, eval and infer on a dask cluster (issue 25, topicscale/distributed.py) against the same
runs in one process: the same model bit for bit for every model and global step, whatever the
number of workers; E-step tasks of one minibatch on both workers and none in the client; a worker
SIGKILLed mid-minibatch survived; a killed client resumed with and without the cluster; fsspec
URLs; the versions check; and without dask installed, the flags say how to install it."""
import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from synthetic import lda_documents, planted_topics, write_corpus
from topicscale import distributed, worker
from topicscale.cli import cli
from topicscale.corpus.shards import Corpus, open_corpus
from topicscale.inference.local_steps.meanfield import MeanField
from topicscale.models import store

dask_distributed = pytest.importorskip("dask.distributed", reason="needs topicscale[dask]")

ROOT = Path(__file__).resolve().parent.parent
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
# 3 chunks a minibatch (70, 70, 60 documents), 3 minibatches a pass over 600 documents
FIT = ["-k", "5", "--batch-size", "200", "--chunk-docs", "70", "--passes", "2", "--seed", "3", "-q"]
CELLS = [("lda", "svi", "meanfield", ()), ("lda", "svi", "gibbs", ("--alpha", "auto")),
         ("lda", "scvb0", "cvb0", ()), ("lda", "batch", "meanfield", ()), ("lda", "ssmf", "meanfield", ()),
         ("lda", "ssmf-a", "gibbs", ()), ("hdp", "svi", "hdp", ()), ("ctm", "svi", "laplace", ()),
         ("ctm", "batch", "bbvi", ())]


def run(*args, code=0):
    r = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    assert r.exit_code == code, r.output
    return r


def arrays(folder):
    return store.load(folder)[1]


def same_model(a, b):
    x, y = arrays(a), arrays(b)
    return x.keys() == y.keys() and all(np.array_equal(x[k], y[k]) for k in x)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    rng = np.random.default_rng(25)
    beta = planted_topics(5, 150, rng)
    root = tmp_path_factory.mktemp("dask")
    train = write_corpus(root / "train", lda_documents(beta, 600, 40, 0.3, rng), 150, shard_docs=250)
    heldout = write_corpus(root / "heldout", lda_documents(beta, 60, 40, 0.3, rng), 150)
    return train.path, heldout.path


@pytest.fixture(scope="module")
def cluster():
    """A LocalCluster of 2 worker processes, one task thread each: (scheduler address, client)."""
    with dask_distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None, silence_logs=logging.ERROR) as lc, \
            dask_distributed.Client(lc) as client:
        client.wait_for_workers(2)
        yield lc.scheduler_address, client


@pytest.mark.parametrize("model,algorithm,local,extra", CELLS, ids=lambda c: c if isinstance(c, str) else "")
def test_the_cluster_fits_the_model_of_one_process(corpus, cluster, tmp_path, model, algorithm, local, extra):
    train, _ = corpus
    args = [*FIT, "--model", model, "--algorithm", algorithm, "--local", local, *extra]
    run("fit", train, *args, "-o", tmp_path / "one")
    run("fit", train, *args, "--scheduler", cluster[0], "-o", tmp_path / "two")
    assert same_model(tmp_path / "one", tmp_path / "two")
    metrics = [json.loads(line) for line in (tmp_path / "two" / "metrics.jsonl").read_text().splitlines()]
    assert sum(m["event"] == "batch" for m in metrics) == 6


def test_the_cluster_trains_on_the_documents_not_held_aside_as_one_process_does(cluster, tmp_path):
    """Trained until it stops improving, a fit holds documents aside (convergence.aside_rows):
    the workers read the rest by their row numbers, and the model is one process's."""
    rng = np.random.default_rng(7)
    train = write_corpus(tmp_path / "c", lda_documents(planted_topics(5, 150, rng), 2000, 20, 0.3, rng), 150,
                         shard_docs=700).path
    args = ["-k", "5", "--batch-size", "400", "--chunk-docs", "150", "--seed", "3", "--json", "-q"]
    one = json.loads(run("fit", train, *args, "-o", tmp_path / "one").stdout)
    two = json.loads(run("fit", train, *args, "--scheduler", cluster[0], "-o", tmp_path / "two").stdout)
    assert one["held_aside"] == two["held_aside"] == 100 and one["pass_scores"] == two["pass_scores"]
    assert one["docs"] == len(one["pass_scores"]) * 1900 and same_model(tmp_path / "one", tmp_path / "two")


def test_chunks_change_only_the_rounding(corpus, tmp_path):
    """The chunk rule is part of the model (the order of the sums), not where chunks run."""
    train, _ = corpus
    run("fit", train, *FIT, "-o", tmp_path / "70")
    run("fit", train, *FIT, "--chunk-docs", "200", "-o", tmp_path / "200")
    a, b = arrays(tmp_path / "70")["lambda"], arrays(tmp_path / "200")["lambda"]
    assert not np.array_equal(a, b) and np.allclose(a, b, rtol=1e-9)


def test_one_local_worker_fits_the_same_model(corpus, tmp_path):
    """--workers 1 (a LocalCluster started by fit) and one process: the same bits."""
    train, _ = corpus
    run("fit", train, *FIT, "-o", tmp_path / "one")
    r = run("fit", train, *FIT, "--workers", "1", "-o", tmp_path / "w1")
    assert "a local dask cluster of 1 worker processes" in r.stderr
    assert same_model(tmp_path / "one", tmp_path / "w1")


def test_both_workers_run_estep_tasks_of_one_minibatch_and_the_client_none(corpus, cluster, tmp_path,
                                                                         monkeypatch):
    train, heldout = corpus
    address, client = cluster
    calls = defaultdict(int)
    for cls, name in ((MeanField, "statistics"), (MeanField, "fit"), (Corpus, "rows")):
        real = getattr(cls, name)
        monkeypatch.setattr(cls, name, lambda *a, _real=real, _name=name, **k: (calls.__setitem__(
            _name, calls[_name] + 1), _real(*a, **k))[1])
    with dask_distributed.get_task_stream(client) as stream:
        r = run("fit", train, *FIT, "--local", "meanfield", "--heldout", heldout, "--scheduler", address,
                "--json", "-o", tmp_path / "m")
    assert json.loads(r.stdout)["heldout"]["per_word_ll"] < 0
    assert dict(calls) == {}                      # no E-step, fold-in or document read in the client
    workers = set(client.scheduler_info(n_workers=-1)["workers"])
    by_batch = defaultdict(list)
    for task in stream.data:
        key = str(task["key"])
        if key.startswith("topicscale-estep-"):
            assert task["worker"] in workers
            by_batch[key.split("-")[2]].append(task["worker"])
    assert sorted(by_batch) == [f"{e}.{b}" for e in (0, 1) for b in range(3)]
    assert all(len(ran) == 3 for ran in by_batch.values())        # each chunk once
    assert any(len(set(ran)) == 2 for ran in by_batch.values())   # both workers, one minibatch


def test_eval_and_infer_on_the_cluster_give_the_same_numbers(corpus, cluster, tmp_path):
    train, heldout = corpus
    run("fit", train, *FIT, "-o", tmp_path / "m")
    for fold_in in ("common", "gibbs"):
        here = json.loads(run("eval", tmp_path / "m", heldout, "--fold-in", fold_in, "--json").stdout)
        there = json.loads(run("eval", tmp_path / "m", heldout, "--fold-in", fold_in, "--json",
                               "--scheduler", cluster[0]).stdout)
        assert here == there and here["documents"] == 60 and here["protocol"] == fold_in
    run("infer", tmp_path / "m", heldout, "-o", tmp_path / "here.npy")
    run("infer", tmp_path / "m", heldout, "-o", tmp_path / "there.npy", "--scheduler", cluster[0])
    assert np.array_equal(np.load(tmp_path / "here.npy"), np.load(tmp_path / "there.npy"))
    assert (tmp_path / "here.ids.txt").read_text() == (tmp_path / "there.ids.txt").read_text()


def test_workers_read_a_corpus_at_an_fsspec_url(corpus, cluster, tmp_path):
    train, _ = corpus
    run("fit", train, *FIT, "-o", tmp_path / "path")
    run("fit", f"file://{train}", *FIT, "--scheduler", cluster[0], "-o", tmp_path / "url")
    assert same_model(tmp_path / "path", tmp_path / "url")


def test_a_memory_url_reads_the_documents_of_the_folder(corpus, tmp_path):
    import fsspec
    train, _ = corpus
    fs = fsspec.filesystem("memory")
    for f in Path(train).iterdir():
        fs.pipe(f"/issue25/{f.name}", f.read_bytes())
    remote, folder = open_corpus("memory://issue25"), Corpus(train)
    assert remote.vocab == folder.vocab and remote.ids() == folder.ids() and remote.n_docs == 600
    rng = np.random.default_rng(1)
    for rows in (np.arange(600), rng.permutation(600)[:77], np.array([249, 250, 251, 0, 599])):
        a, b = remote.rows(rows), folder.rows(rows)
        assert all(np.array_equal(getattr(a, f), getattr(b, f)) for f in ("rows", "indptr", "indices", "counts"))
    run("fit", "memory://issue25", *FIT, "-o", tmp_path / "url")
    run("fit", train, *FIT, "-o", tmp_path / "path")
    assert same_model(tmp_path / "path", tmp_path / "url")


def test_workers_of_other_versions_are_refused(corpus, cluster, tmp_path, monkeypatch):
    train, _ = corpus
    real = worker.versions
    monkeypatch.setattr(worker, "versions", lambda: dict(real(), numba="0.0.1"))   # the client's only
    r = run("fit", train, *FIT, "--scheduler", cluster[0], "-o", tmp_path / "m", code=2)
    assert "runs numba" in r.output and "(client 0.0.1)" in r.output and "install the client's versions" in r.output
    with pytest.raises(worker.VersionMismatch):
        worker.ready(dict(real(), numpy="0.0.1"), 1)        # and each task checks them again


@pytest.mark.filterwarnings("ignore:Port .* is already in use")   # the module's cluster has it
def test_workers_with_several_task_threads_are_refused(corpus, tmp_path):
    train, _ = corpus
    with dask_distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=True,
                                       dashboard_address=None, silence_logs=logging.ERROR) as lc:
        r = run("fit", train, *FIT, "--scheduler", lc.scheduler_address, "-o", tmp_path / "m", code=2)
    assert "runs 2 task threads" in r.output and "--nthreads 1" in r.output
    r = run("fit", train, *FIT, "--scheduler", "tcp://127.0.0.1:1", "--workers", "2", "-o", tmp_path / "m",
            code=2)
    assert "--scheduler and --workers do not go together" in r.output


def test_a_worker_killed_mid_minibatch_is_survived(corpus, cluster, tmp_path, monkeypatch):
    """SIGKILL the worker running an E-step task of the third minibatch: its tasks rerun on the
    other worker (the nanny restarts the killed one), nothing is counted twice, same model."""
    train, _ = corpus
    address, client = cluster
    slow = [*FIT, "--local", "meanfield", "--tol", "0", "--max-iter", "2000"]   # chunks of ~30 ms
    run("fit", train, *slow, "-o", tmp_path / "one")
    pids, killed = client.run(worker.pid), []
    real_gather = distributed.Executor.gather

    def gather(self, futures):
        keys = {f.key for f in futures}
        if not killed and any(k.startswith("topicscale-estep-0.2-") for k in keys):
            deadline = time.monotonic() + 10
            while not killed and time.monotonic() < deadline:
                for address_, processing in client.processing().items():
                    if keys & set(processing):
                        os.kill(pids[address_], signal.SIGKILL)
                        killed.append(address_)
                        break
                time.sleep(0.002)
        return real_gather(self, futures)

    monkeypatch.setattr(distributed.Executor, "gather", gather)
    r = run("fit", train, *slow, "--scheduler", address, "--json", "-o", tmp_path / "two")
    assert killed, "no E-step task of the third minibatch was seen running"
    assert json.loads(r.stdout)["docs"] == 1200
    assert same_model(tmp_path / "one", tmp_path / "two")
    client.wait_for_workers(2, timeout=60)                  # the nanny replaced the killed worker
    assert pids[killed[0]] not in client.run(worker.pid).values()


# The fit in a child process (its own LocalCluster of 2 workers) SIGKILLs itself right after
# its N-th checkpoint: the client and scheduler are lost at once.
CHILD = textwrap.dedent("""
    import os, signal, sys
    n, real_replace, seen = int(sys.argv[1]), os.replace, [0]

    def replace(src, dst, *args, **kwargs):
        real_replace(src, dst, *args, **kwargs)
        if os.path.basename(os.fspath(dst)) == "checkpoint.npz":
            seen[0] += 1
            if seen[0] == n:
                os.kill(os.getpid(), signal.SIGKILL)

    os.replace = replace
    from topicscale.cli import main
    main(sys.argv[2:])
""")


def test_a_lost_client_resumes_on_this_machine_or_the_cluster(corpus, cluster, tmp_path):
    train, _ = corpus
    run("fit", train, *FIT, "-o", tmp_path / "whole")
    child = subprocess.Popen([sys.executable, "-c", CHILD, "4", "fit", str(train), *FIT, "--checkpoint-every", "1",
                              "--workers", "2", "-o", str(tmp_path / "killed")],
                             env=ENV, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _, err = child.communicate(timeout=180)
    finally:
        try:
            os.killpg(child.pid, signal.SIGKILL)             # its worker processes
        except ProcessLookupError:
            pass
    assert child.returncode == -signal.SIGKILL, err
    assert "a local dask cluster of 2 worker processes" in err
    for name in ("here", "there"):
        subprocess.run(["cp", "-r", str(tmp_path / "killed"), str(tmp_path / name)], check=True)
    r = run("fit", "--resume", tmp_path / "here")
    assert "dask" not in r.stderr                           # continued in this process
    run("fit", "--resume", tmp_path / "there", "--scheduler", cluster[0])
    assert same_model(tmp_path / "whole", tmp_path / "here")
    assert same_model(tmp_path / "whole", tmp_path / "there")


NO_DASK = textwrap.dedent("""
    import sys
    for name in ("dask", "distributed", "dask.distributed"):
        sys.modules[name] = None                            # import fails as if not installed
    from topicscale.cli import main
    main(sys.argv[1:])
""")


@pytest.mark.parametrize("command", [["fit", "{train}", "--workers", "2", "-o", "{out}"],
                                     ["fit", "{train}", "--scheduler", "tcp://127.0.0.1:8786", "-o", "{out}"],
                                     ["eval", "{out}", "{heldout}", "--workers", "2"],
                                     ["infer", "{out}", "{heldout}", "-o", "{out}/t.npy", "--scheduler", "x:1"]])
def test_without_dask_the_flags_say_how_to_install_it(corpus, tmp_path, command):
    train, heldout = corpus
    args = [a.format(train=train, heldout=heldout, out=tmp_path / "m") for a in command]
    if command[0] != "fit":
        run("fit", train, *FIT, "-o", tmp_path / "m")
    r = subprocess.run([sys.executable, "-c", NO_DASK, *args], env=ENV, capture_output=True, text=True)
    assert r.returncode == 2, r.stderr
    assert "pip install topicscale[dask]" in r.stderr and r.stderr.count("\n") == 1
    assert command[0] != "fit" or not (tmp_path / "m").exists()


def test_nothing_else_imports_dask(corpus, tmp_path):
    train, _ = corpus
    code = textwrap.dedent(f"""
        import sys
        import topicscale.cli
        from topicscale.cli import cli
        cli.main(["fit", {str(train)!r}, "-k", "3", "--passes", "1", "-q", "-o", {str(tmp_path / 'm')!r}],
                 standalone_mode=False)
        print(sorted(m for m in sys.modules if m.split(".")[0] in ("dask", "distributed")))
    """)
    r = subprocess.run([sys.executable, "-c", code], env=ENV, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "[]" and (tmp_path / "m" / "model.npz").is_file()


@pytest.mark.filterwarnings("ignore:Port .* is already in use")   # the module's cluster has it
def test_a_lost_scheduler_or_a_malformed_address_is_one_line(corpus, tmp_path, monkeypatch, caplog):
    """The scheduler gone mid-run: one line (was distributed's traceback) that keeps the
    checkpoint for --resume, which ends with the model of one process; a malformed address is
    refused in one line too."""
    train, _ = corpus
    lc = dask_distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                       dashboard_address=None, silence_logs=logging.ERROR)
    real_gather, calls = distributed.Executor.gather, []

    def gather(self, futures):
        calls.append(None)
        if len(calls) == 12:                    # in the second minibatch
            lc.close()
        return real_gather(self, futures)

    monkeypatch.setattr(distributed.Executor, "gather", gather)
    out = tmp_path / "m"
    r = run("fit", train, *FIT, "--checkpoint-every", "1", "--scheduler", lc.scheduler_address, "-o", out, code=2)
    error = [line for line in r.output.splitlines() if line.startswith("topicscale: error:")]
    assert len(error) == 1 and error[0].startswith("topicscale: error: lost the dask cluster"), r.output
    assert f"checkpoint in {out} is kept" in r.output and "Traceback" not in r.output
    monkeypatch.undo()
    run("fit", "--resume", out)
    run("fit", train, *FIT, "-o", tmp_path / "one")
    assert same_model(out, tmp_path / "one")
    assert_a_killed_scheduler_is_one_line(train, tmp_path, monkeypatch, caplog)
    for address in ("http://127.0.0.1:8786", "tcp://127.0.0.1"):
        r = run("fit", train, *FIT, "--scheduler", address, "-o", tmp_path / "x", code=2)
        assert f"cannot reach the dask scheduler at {address}" in r.output and "tcp://HOST:PORT" in r.output


def test_a_worker_reading_another_corpus_or_none_is_refused(corpus):
    """Workers read the corpus at the client's path or URL: one that reads another corpus there (a
    stale copy, another mount) or cannot read it is named before any work (was a wrong model, or
    "not a topicscale corpus" of a path the client reads)."""
    train, _ = corpus
    c = open_corpus(train)

    class Client:
        def __init__(self, answer):
            self.answer = answer

        def run(self, fn, *args):
            return {"tcp://10.0.0.7:4000": self.answer}

    distributed.Executor(Client(worker.corpus_manifest(c.location))).check_corpus(c)     # the same: fine
    other = dict(c.manifest, source=[{"input": "elsewhere.jsonl", "format": "jsonl"}])
    with pytest.raises(distributed.TopicscaleError, match="worker tcp://10.0.0.7:4000 reads another corpus at"):
        distributed.Executor(Client(other)).check_corpus(c)
    with pytest.raises(distributed.TopicscaleError, match="worker tcp://10.0.0.7:4000 cannot read the corpus: "
                                                          ".*not a topicscale corpus"):
        distributed.Executor(Client(worker.corpus_manifest(str(train) + "-gone"))).check_corpus(c)


def test_a_worker_reopens_a_corpus_prepared_anew_at_its_path(tmp_path):
    """A long-lived worker keeps the corpora it opened; one prepared anew at the same path (other
    documents) is reopened when a run checks it, not read through the old offsets."""
    rng = np.random.default_rng(3)
    beta = planted_topics(3, 40, rng)
    first = write_corpus(tmp_path / "c", lda_documents(beta, 50, 20, 0.3, rng), 40)
    assert worker.corpus(str(first.path)).n_docs == 50
    again = write_corpus(tmp_path / "c", lda_documents(beta, 70, 20, 0.3, rng), 40)
    assert worker.corpus_manifest(str(again.path))["n_docs"] == 70
    assert worker.corpus(str(again.path)).n_docs == 70


def assert_a_killed_scheduler_is_one_line(train, tmp_path, monkeypatch, caplog):
    """A scheduler process SIGKILLed mid-run: one line, without the error (a traceback on stderr)
    dask's client logs when it is closed while reconnecting."""
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dask = Path(sys.executable).parent / "dask"
    address = f"tcp://127.0.0.1:{port}"
    scheduler = subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", str(port),
                                  "--no-dashboard"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    worker_process = subprocess.Popen([dask, "worker", address, "--nthreads", "1", "--no-dashboard"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        real_gather, calls = distributed.Executor.gather, []

        def gather(self, futures):
            calls.append(None)
            if len(calls) == 12:
                scheduler.send_signal(signal.SIGKILL)
                scheduler.wait()
            return real_gather(self, futures)

        monkeypatch.setattr(distributed.Executor, "gather", gather)
        caplog.clear()
        r = run("fit", train, *FIT, "--scheduler", address, "-o", tmp_path / "killed", code=2)
        assert "lost the dask cluster" in r.output
        time.sleep(0.5)
        assert not [r for r in caplog.records if r.name == "distributed.client" and r.levelno >= logging.ERROR]
    finally:
        monkeypatch.undo()
        for process in (worker_process, scheduler):
            process.kill()
            process.wait()
