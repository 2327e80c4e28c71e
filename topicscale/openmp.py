"""How OpenMP's threads wait, chosen as topicscale is imported (before numba loads OpenMP)."""


def others_running(loadavg="/proc/loadavg"):
    """Whether another task is runnable right now: /proc/loadavg's fourth field counts the
    runnable tasks, this one included (False where it cannot be read)."""
    try:
        with open(loadavg, encoding="ascii") as f:
            return int(f.read().split()[3].split("/")[0]) > 1
    except (OSError, ValueError, IndexError):
        return False


def choose_wait_policy(environ, loadavg="/proc/loadavg"):
    """OMP_WAIT_POLICY=PASSIVE when another task wants a core and the user chose no policy.
    GNU OpenMP (numba's "omp" threading layer) keeps a thread that waits at the end of a
    parallel loop spinning on its core for a while; where another process wants that core, the
    spinning thread takes turns from the one still working, and each of a minibatch's loops
    waits for the scheduler. Waiting threads then sleep at once; on an idle machine they spin,
    which wakes them sooner (benchmarks/results/contention.md). Read by the OpenMP runtime when
    it loads (numba.set_num_threads or the first parallel kernel), so chosen as topicscale is
    imported, before --threads is known (the default uses every core); processes started from
    this one (dask workers) inherit it."""
    if "OMP_WAIT_POLICY" not in environ and others_running(loadavg):
        environ["OMP_WAIT_POLICY"] = "PASSIVE"
