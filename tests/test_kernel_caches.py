"""Cached kernels are dropped when any kernel source changes (topicscale/kernels/__init__.py)."""
import os
import shutil
from pathlib import Path

import topicscale.kernels as kernels
from topicscale.kernels import STAMP_NAME, cache_folders, drop_stale_caches


def cached_files(directory, cache="__pycache__"):
    return sorted(p.name for p in (directory / cache).glob("*.nb[ic]"))


def make_caches(directory, cache="__pycache__"):
    for name in ("a.f-1.py311.nbi", "a.f-1.py311.1.nbc", "b.g-3.py311.nbi"):
        (directory / cache / name).write_text("compiled")


def test_caches_survive_until_a_source_changes_then_all_are_dropped(tmp_path):
    (tmp_path / "a.py").write_text("def f(): pass\n")
    (tmp_path / "b.py").write_text("def g(): pass\n")
    (tmp_path / "__pycache__").mkdir()
    make_caches(tmp_path)
    assert drop_stale_caches(tmp_path) == 3           # no stamp yet: nothing is known to be current
    make_caches(tmp_path)
    assert drop_stale_caches(tmp_path) == 0 and len(cached_files(tmp_path)) == 3
    (tmp_path / "b.py").write_text("def g(): return 1\n")   # b changed: a's kernels may inline it
    assert drop_stale_caches(tmp_path) == 3 and cached_files(tmp_path) == []
    make_caches(tmp_path)
    stat = (tmp_path / "a.py").stat()
    os.utime(tmp_path / "a.py", ns=(stat.st_atime_ns, stat.st_mtime_ns + 10 ** 9))   # touched only
    assert drop_stale_caches(tmp_path) == 3
    assert drop_stale_caches(tmp_path) == 0


def test_importing_the_kernels_records_the_current_sources():
    """The package import ran the check: its stamp names every kernel source as it is now."""
    directory = Path(kernels.__file__).parent
    stamp = (directory / "__pycache__" / STAMP_NAME).read_text().splitlines()
    assert [line.split()[0] for line in stamp] == sorted(p.name for p in directory.glob("*.py"))
    assert drop_stale_caches(directory) == 0


def test_caches_under_numba_cache_dir_are_checked_too(tmp_path, monkeypatch):
    """With NUMBA_CACHE_DIR set, numba caches in a folder of its own there (named as numba's
    cache locator names it); those kernels are dropped after a source change as well."""
    from numba.core.caching import _CacheLocator
    sources = tmp_path / "kernels"
    sources.mkdir()
    (sources / "a.py").write_text("def f(): pass\n")
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "numba"))
    user_cache = tmp_path / "numba" / _CacheLocator.get_suitable_cache_subpath(str(sources / "a.py"))
    assert cache_folders(sources) == [sources / "__pycache__", user_cache]
    drop_stale_caches(sources)
    make_caches(sources, user_cache)
    assert drop_stale_caches(sources) == 0 and len(cached_files(sources, user_cache)) == 3
    (sources / "a.py").write_text("def f(): return 1\n")
    assert drop_stale_caches(sources) == 3 and cached_files(sources, user_cache) == []


def test_the_user_wide_numba_cache_is_checked_when_numba_caches_there(tmp_path, monkeypatch):
    """Where __pycache__ cannot be written, numba caches under the user's cache folder
    (UserWideCacheLocator, named as for NUMBA_CACHE_DIR). That folder is checked when it exists,
    and stamped ahead of numba when __pycache__ cannot be written (so the first run's kernels are
    not dropped for want of a stamp); otherwise nothing is written there."""
    from numba.core.caching import UserWideCacheLocator

    def f():
        pass
    sources = tmp_path / "kernels"
    sources.mkdir()
    (sources / "a.py").write_text("def f(): pass\n")
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home-cache"))
    user_wide = Path(UserWideCacheLocator(f, str(sources / "a.py")).get_cache_path())
    assert cache_folders(sources) == [sources / "__pycache__"] and not user_wide.exists()
    user_wide.mkdir(parents=True)
    assert cache_folders(sources) == [sources / "__pycache__", user_wide]
    make_caches(sources, user_wide)
    assert drop_stale_caches(sources) == 3 and cached_files(sources, user_wide) == []   # no stamp yet
    make_caches(sources, user_wide)
    assert drop_stale_caches(sources) == 0 and len(cached_files(sources, user_wide)) == 3
    (sources / "a.py").write_text("def f(): return 1\n")
    assert drop_stale_caches(sources) == 3 and cached_files(sources, user_wide) == []
    shutil.rmtree(user_wide)
    real_access = os.access
    monkeypatch.setattr(os, "access",
                        lambda path, mode: Path(path) != sources / "__pycache__" and real_access(path, mode))
    assert cache_folders(sources) == [sources / "__pycache__", user_wide]
    drop_stale_caches(sources)                       # stamps the user-wide folder before numba writes
    make_caches(sources, user_wide)
    assert drop_stale_caches(sources) == 0 and len(cached_files(sources, user_wide)) == 3
