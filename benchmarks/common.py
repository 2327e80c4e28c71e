"""Shared pieces of the benchmark scripts: child processes with pinned thread pools, the
`topicscale` command, the run log, machine facts and small statistics.

Every measured command runs in a child process whose environment pins all BLAS / OpenMP
pools to the benchmark's thread count. OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE, which this
machine's image sets to work around old OpenBLAS builds, are removed in the children (both
together): with them numpy 2's OpenBLAS runs its Haswell kernels instead of the machine's
own (SkylakeX on this AVX-512 EPYC), about 2x slower on a matrix product, which would slow
the peers' BLAS calls. The kernels the children actually use are reported (threadpoolctl).
"""
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
               "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "BLIS_NUM_THREADS")
UNSET_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


class BenchError(RuntimeError):
    pass


def child_env(threads, numba_cache=None, extra=None):
    env = dict(os.environ)
    for var in THREAD_VARS:
        env[var] = str(threads)
    for var in UNSET_VARS:
        env.pop(var, None)
    if numba_cache is not None:
        env["NUMBA_CACHE_DIR"] = str(numba_cache)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env.pop("PYTHONHASHSEED", None)
    env.update(extra or {})
    return env


def topicscale_command():
    """The `topicscale` executable of this interpreter's environment, else on PATH, else the shim."""
    local = Path(sys.executable).parent / "topicscale"
    if local.is_file() and os.access(local, os.X_OK):
        return [str(local)]
    found = shutil.which("topicscale")
    if found:
        return [found]
    return [sys.executable, str(ROOT / "bin" / "topicscale")]


def run(cmd, env, what, log, timeout=None, check=True):
    """Run a command, return (stdout, wall seconds); raise BenchError with its stderr on failure.
    The log gets the command, its wall and CPU time (reaped children), peak RSS of the largest
    child so far (ru_maxrss of RUSAGE_CHILDREN) and the 1-minute load average before it."""
    shown = " ".join(str(c) for c in cmd)
    print(f"bench: {what}: {shown}", file=sys.stderr, flush=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([str(c) for c in cmd], env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        log.append({"what": what, "command": shown, "exit": None, "wall_seconds": timeout,
                    "timeout": True, "loadavg_1min_before": load})
        raise BenchError(f"{what} timed out after {timeout} s: {shown}") from exc
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    entry = {"what": what, "command": shown, "exit": proc.returncode, "wall_seconds": wall,
             "cpu_seconds": cpu, "loadavg_1min_before": load,
             "stderr_tail": proc.stderr.strip().splitlines()[-20:]}
    log.append(entry)
    if check and proc.returncode != 0:
        raise BenchError(f"{what} failed (exit {proc.returncode}): {shown}\n{proc.stderr.strip()[-3000:]}")
    return proc.stdout, wall


def last_json(text, what):
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{") or line.startswith("["):
            try:
                return json.loads(line)
            except ValueError:
                break
    raise BenchError(f"{what}: no JSON on stdout; got:\n{text[-2000:]}")


def run_worker(script, kind, spec, work, env, log, what=None, timeout=None):
    """Run `python SCRIPT --worker KIND SPEC.json` and return the JSON it wrote to spec['result_out']."""
    work = Path(work)
    tag = spec.get("tag", kind)
    spec = dict(spec, result_out=str(work / f"result-{tag}.json"))
    spec_path = work / f"spec-{tag}.json"
    spec_path.write_text(json.dumps(spec))
    Path(spec["result_out"]).unlink(missing_ok=True)
    _, wall = run([sys.executable, str(script), "--worker", kind, str(spec_path)], env, what or tag, log,
                  timeout=timeout)
    result = json.loads(Path(spec["result_out"]).read_text())
    if isinstance(result, dict):
        result["process_wall_seconds"] = wall
        result["process_cpu_seconds"] = log[-1]["cpu_seconds"]
    return result


def cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def mem_total_gib():
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 1024 ** 2
    except OSError:
        pass
    return None


def source_state():
    """The commit measured and the files of topicscale/ that differ from it (others edit the tree)."""
    def git(*a):
        try:
            return subprocess.run(["git", "-C", str(ROOT)] + list(a), capture_output=True, text=True,
                                  timeout=10).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return None
    return {"commit": git("rev-parse", "HEAD"), "dirty": (git("status", "--short", "topicscale") or "").splitlines()}


def machine():
    return {"source": source_state(),"cpu": cpu_model(), "cores": os.cpu_count(),
            "cores_available": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
            "memory_gib": mem_total_gib(), "platform": platform.platform(),
            "python": platform.python_version(), "loadavg": os.getloadavg(),
            "OPENBLAS_CORETYPE (machine)": os.environ.get("OPENBLAS_CORETYPE"),
            "OPENBLAS_L2_SIZE (machine)": os.environ.get("OPENBLAS_L2_SIZE")}


def versions():
    """Versions and thread pools as a child sees them (call inside a worker)."""
    import importlib
    info = {"python": platform.python_version()}
    for mod in ("numpy", "scipy", "numba", "llvmlite", "gensim", "sklearn", "joblib", "threadpoolctl",
                "tomotopy", "vowpalwabbit", "matplotlib", "topicscale"):
        try:
            m = importlib.import_module(mod)
            info[mod] = getattr(m, "__version__", None) or getattr(getattr(m, "version", None), "__version__", "?")
        except Exception as exc:         # noqa: BLE001 - report, do not fail
            info[mod] = f"unavailable ({type(exc).__name__})"
    try:
        for mod in ("numpy", "scipy.linalg", "sklearn.decomposition"):    # load their BLAS / OpenMP
            importlib.import_module(mod)
        from threadpoolctl import threadpool_info
        info["threadpools"] = [{k: p.get(k) for k in ("user_api", "internal_api", "prefix", "version",
                                                       "num_threads", "architecture", "threading_layer")}
                               for p in threadpool_info()]
    except Exception as exc:             # noqa: BLE001
        info["threadpools"] = f"unavailable ({type(exc).__name__}: {exc})"
    return info


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def spread(xs):
    """(min, max, relative spread (max - min) / median) of the values."""
    xs = [x for x in xs if x is not None]
    if not xs:
        return None
    m = statistics.median(xs)
    return {"min": min(xs), "max": max(xs), "rel": (max(xs) - min(xs)) / m if m else None, "n": len(xs)}


def fmt_spread(xs, digits=2):
    s = spread(xs)
    if s is None:
        return "-"
    if s["n"] == 1:
        return f"{xs[0]:.{digits}f}"
    return f"{med(xs):.{digits}f} [{s['min']:.{digits}f}-{s['max']:.{digits}f}]"


def fmt_percent_runs(xs):
    """'median% [min-max%]' of ratios (per-repeat efficiencies), or '-'."""
    if not xs:
        return "-"
    return f"{100 * med(xs):.0f}% [{100 * min(xs):.0f}-{100 * max(xs):.0f}%]"


def write_json(path, obj):
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(str(path) + ".part")
    tmp.write_text(json.dumps(obj, indent=1, default=float))
    tmp.replace(path)
