"""How OpenMP's threads wait (topicscale/openmp.py): they sleep at once when another task is
runnable as topicscale is imported, and a policy the user set is kept."""
import os
import subprocess
import sys

from topicscale.openmp import choose_wait_policy, others_running


def loadavg(tmp_path, runnable):
    path = tmp_path / "loadavg"
    path.write_text(f"1.20 0.90 0.70 {runnable}/412 31337\n")
    return path


def test_passive_only_when_another_task_is_runnable(tmp_path):
    assert others_running(loadavg(tmp_path, 2)) and not others_running(loadavg(tmp_path, 1))
    env = {}
    choose_wait_policy(env, loadavg(tmp_path, 1))
    assert env == {}                                    # an idle machine: OpenMP's own default
    choose_wait_policy(env, loadavg(tmp_path, 3))
    assert env == {"OMP_WAIT_POLICY": "PASSIVE"}


def test_the_users_policy_and_an_unreadable_loadavg_are_left_alone(tmp_path):
    env = {"OMP_WAIT_POLICY": "ACTIVE"}
    choose_wait_policy(env, loadavg(tmp_path, 5))
    assert env == {"OMP_WAIT_POLICY": "ACTIVE"}
    for broken in (tmp_path / "missing", tmp_path / "garbled"):
        if broken.name == "garbled":
            broken.write_text("not a loadavg\n")
        env = {}
        choose_wait_policy(env, broken)
        assert env == {} and not others_running(broken)


def test_the_policy_is_chosen_before_numba_loads_openmp():
    """Beside a busy process, importing topicscale sets the policy before the OpenMP runtime is
    loaded; numba.set_num_threads (the command line's --threads) loads it, and it reads the
    policy once."""
    code = ("import os, topicscale, numba; gomp = lambda: any('gomp' in l for l in open('/proc/self/maps')); "
            "print(os.environ.get('OMP_WAIT_POLICY'), gomp()); numba.set_num_threads(1); print(gomp())")
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                             check=True).stdout.split()
    finally:
        busy.kill()
        busy.wait()
    assert out[:2] == ["PASSIVE", "False"]
    assert out[2] == str(numba_layer_is_gnu_openmp())


def numba_layer_is_gnu_openmp():
    code = ("import numba, numpy as np\n@numba.njit(parallel=True)\ndef f(a):\n    s = 0.0\n"
            "    for i in numba.prange(a.shape[0]):\n        s += a[i]\n    return s\nf(np.ones(4))\n"
            "print(numba.threading_layer() == 'omp' and any('gomp' in l for l in open('/proc/self/maps')))")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip() == "True"
