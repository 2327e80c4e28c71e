"""Cached kernels are dropped when any kernel source changes (topicscale/kernels/__init__.py)."""
import os

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
    from pathlib import Path
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
