"""Turning raw text into tokens: a regular-expression tokenizer and stop-word lists."""
import functools
import importlib.resources
import re
import unicodedata

from ..errors import TopicscaleError

# A token is a run of two or more letters (any script) standing on its own: digits,
# underscores, apostrophes and hyphens are not letters, so "state-of-the-art" gives
# "state", "of", "the", "art", "don't" gives "don" (a stop word), and a word glued to a
# digit or underscore ("mp3", "x_1") is no token at all.
DEFAULT_TOKEN_PATTERN = r"(?u)\b[^\W\d_]{2,}\b"


@functools.lru_cache(maxsize=1)
def _english():
    text = importlib.resources.files(__package__).joinpath("stopwords.txt").read_text("utf-8")
    return frozenset(_words(text.splitlines()))


def _words(lines):
    for line in lines:
        word = line.strip()
        if word and not word.startswith("#"):
            yield word


def load_stopwords(spec=None):
    """Stop words from `spec`: None or "english" (built-in list), "none" (no stop words),
    or the path of a file with one word per line ('#' starts a comment line; .gz allowed)."""
    if spec is None or str(spec).lower() == "english":
        return _english()
    if str(spec).lower() == "none":
        return frozenset()
    from .readers import iter_lines  # readers imports this module
    return frozenset(_words(line for _, line in iter_lines(spec)))


class Tokenizer:
    """Split text into tokens with `token_pattern` (text is NFC-normalised first, so accented
    letters written as letter + combining mark still count as letters), then optionally
    lower-case each token and drop stop words (compared after lower-casing)."""

    def __init__(self, stopwords=frozenset(), token_pattern=DEFAULT_TOKEN_PATTERN, lowercase=True):
        try:
            self.pattern = re.compile(token_pattern)
        except (re.error, TypeError, ValueError, OverflowError) as e:
            raise TopicscaleError(f"invalid token pattern {token_pattern!r}: {e}") from None
        self.lowercase = lowercase
        self.stopwords = frozenset(w.lower() for w in stopwords) if lowercase else frozenset(stopwords)

    def tokens(self, text):
        found = (m.group(0) for m in self.pattern.finditer(unicodedata.normalize("NFC", text)))
        if self.lowercase:
            found = (t.lower() for t in found)
        stop = self.stopwords
        return [t for t in found if t and t not in stop]

    __call__ = tokens


def described(stopwords_spec, token_pattern):
    """How text is tokenised, as a corpus manifest records it (stats "tokenizer") so that new text
    encoded with its vocabulary is tokenised alike: the token pattern, and the stop words as
    "english", "none" or the list a file gave."""
    spec = "english" if stopwords_spec is None else str(stopwords_spec)
    words = spec.lower() if spec.lower() in ("english", "none") else sorted(load_stopwords(spec))
    return {"token_pattern": token_pattern, "stopwords": words}


def from_description(tokenizer):
    """The Tokenizer a `described` record stands for."""
    words = tokenizer["stopwords"]
    return Tokenizer(load_stopwords(words) if isinstance(words, str) else words, tokenizer["token_pattern"])
