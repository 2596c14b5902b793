"""Splitting a plain command line into words, as ``shlex.split`` does, at bounded cost.

The quoting rules are ``shlex.split``'s (POSIX mode): words are separated by
space, tab, CR or LF; ``'...'`` keeps everything literally; ``"..."`` keeps
everything but ``\\"`` and ``\\\\``, which stand for ``"`` and ``\\``; outside
quotes a backslash takes the next character literally; quoted pieces join the
word they touch, and ``""`` alone is an empty word.

``shlex`` reads one character at a time in Python and grows a word by string
concatenation (quadratic in the word's length): a 64 KiB line cost 25-120 ms.
Here regular expressions with possessive quantifiers (nothing is tried twice)
do the scanning, the pieces of a word are decoded together, and a line is
refused beyond :data:`MAX_WORDS` words or :data:`MAX_QUOTING` quotes and
backslashes, which bounds the work done per piece in Python. A person typing
a command needs a handful of each; a program sends JSON.
"""

from __future__ import annotations

import re

MAX_WORDS = 32
MAX_QUOTING = 256
SPACE = " \t\r\n"

_SPACES = re.compile(r"[ \t\r\n]*+")
_WORD = re.compile(r"""(?:[^ \t\r\n'"\\]++|\\.|'[^']*+'|"[^"\\]*+(?:\\.[^"\\]*+)*+")++""",
                   re.DOTALL)
# One piece of a word: its single-quoted, double-quoted, escaped or plain text.
_PIECE = re.compile(r"""'([^']*+)'|"([^"\\]*+(?:\\.[^"\\]*+)*+)"|\\(.)|([^'"\\]++)""", re.DOTALL)
_DQ_BODY = re.compile(r"""[^"\\]*+(?:\\.[^"\\]*+)*+""", re.DOTALL)
_DQ_ESCAPE = re.compile(r"""\\(["\\])""")


class SplitError(ValueError):
    """A line that cannot be split (broken quoting) or is over a limit; a sentence for people."""


def split_words(text: str, max_words: int = MAX_WORDS, max_quoting: int = MAX_QUOTING
                ) -> list[str]:
    """The words of ``text``, or :class:`SplitError`."""
    if "\0" in text:
        raise SplitError("The command line contains a NUL character.")
    quoting = text.count("'") + text.count('"') + text.count("\\")
    if quoting > max_quoting:
        raise SplitError(f"A command line may hold at most {max_quoting} quotes and "
                         f"backslashes; send long texts as JSON.")
    words: list[str] = []
    pos = _skip_spaces(text, 0)
    end = len(text)
    while pos < end:
        if len(words) == max_words:
            raise SplitError(f"A command line has at most {max_words} words.")
        m = _WORD.match(text, pos)
        stop = m.end() if m else pos
        if stop < end and text[stop] not in SPACE:
            raise SplitError(f"Cannot split the command line: {_broken(text, stop)}.")
        assert m is not None  # something that is neither space nor broken starts a word
        words.append(_decode(m.group()) if quoting else m.group())
        pos = _skip_spaces(text, stop)
    return words


def _skip_spaces(text: str, pos: int) -> int:
    m = _SPACES.match(text, pos)
    assert m is not None  # it matches the empty string too
    return m.end()


def _broken(text: str, at: int) -> str:
    """Why a word stopped at ``at``, in ``shlex``'s words."""
    if text[at] == '"':
        body = _DQ_BODY.match(text, at + 1)
        if body is not None and body.end() < len(text):
            return "No escaped character"  # "...\ at the very end
    elif text[at] == "\\":
        return "No escaped character"  # a backslash at the very end
    return "No closing quotation"


def _decode(word: str) -> str:
    if "'" not in word and '"' not in word and "\\" not in word:
        return word
    single, double, escaped, plain = zip(*_PIECE.findall(word), strict=True)
    if "\\" in word:
        # Every double-quoted body unescaped in one pass (a line holds no NUL: see split_words).
        double = tuple(_DQ_ESCAPE.sub(r"\1", "\0".join(double)).split("\0"))
    return "".join(map("".join, zip(single, double, escaped, plain, strict=True)))
