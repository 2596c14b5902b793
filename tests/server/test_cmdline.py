"""The plain-line splitter: ``shlex.split``'s quoting rules, and its two caps.

The rules are checked against ``shlex.split`` itself on random lines made of the
characters that matter (quotes, backslashes, the separators shlex knows and some
it does not); its cost is measured against a running server in
tests/hardening/test_login_and_parsing_limits.py.
"""

from __future__ import annotations

import shlex

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from testkit.sizes import examples

from server.cmdline import MAX_QUOTING, MAX_WORDS, SplitError, split_words
from server.plugins import command_table
from server.protocol import ProtocolError, parse_frame

TABLE = command_table()

ALPHABET = st.sampled_from(["a", "b", "é", " ", "  ", "\t", "\n", "\r", "'", '"', "\\",
                            "\u3000", "\x0b", "\x0c", "\xa0", "--x", "#"])
LINES = st.lists(ALPHABET, max_size=30).map("".join)


def shlex_words(text: str) -> list[str] | str:
    try:
        return shlex.split(text)
    except ValueError as e:
        return str(e)


def our_words(text: str) -> list[str] | str:
    try:
        return split_words(text, max_words=10_000, max_quoting=10_000)
    except SplitError as e:
        return str(e)


@settings(max_examples=examples(3000), deadline=None, derandomize=True, database=None)
@given(LINES)
@example('a"b c"d')
@example('"a\\"b" \'c\\\' "\\\\" "\\x"')
@example('"" \'\' a""')
@example('"abc\\')
@example("abc\\")
@example("'unclosed")
def test_the_words_are_those_of_shlex_split(text: str) -> None:
    expected, got = shlex_words(text), our_words(text)
    if isinstance(expected, str):  # shlex refused it: so do we, for the same reason
        assert isinstance(got, str), (text, got)
        assert got == f"Cannot split the command line: {expected}.", (text, got)
    else:
        assert got == expected, text


@pytest.mark.parametrize(("line", "words"), [
    ('event create "Brno Open" scrabble', ["event", "create", "Brno Open", "scrabble"]),
    ("void 3 'it''s a typo'", ["void", "3", "its a typo"]),
    ('void 3 "say \\"no\\" to \\\\ it"', ["void", "3", 'say "no" to \\ it']),
    ("login alice pass\\ word", ["login", "alice", "pass word"]),
    ("  who\t\r\n", ["who"]),
    ("", []),
])
def test_typical_lines(line: str, words: list[str]) -> None:
    assert split_words(line) == words


def test_at_most_max_words_words() -> None:
    assert len(split_words(" ".join(["w"] * MAX_WORDS))) == MAX_WORDS
    with pytest.raises(SplitError, match=f"at most {MAX_WORDS} words"):
        split_words(" ".join(["w"] * (MAX_WORDS + 1)))
    # a 64 KiB line of quoted words is refused for its words, not split to the end
    with pytest.raises(SplitError, match="at most"):
        split_words("help " + '"a" ' * 16_000, max_quoting=10**6)


def test_at_most_max_quoting_quotes_and_backslashes() -> None:
    word = "'" + "a" * 10 + "'"
    assert split_words("help " + word * (MAX_QUOTING // 2)) == ["help", "a" * 10 * (MAX_QUOTING // 2)]
    for extra in ("'", '"', "\\"):
        line = "help " + word * (MAX_QUOTING // 2) + extra
        with pytest.raises(SplitError, match=f"at most {MAX_QUOTING} quotes and backslashes"):
            split_words(line)


def test_a_long_word_is_kept_whole() -> None:
    body = "x y\tz" * 10_000
    assert split_words(f"help '{body}'") == ["help", body]
    assert split_words(f'help "{body}\\"\\\\"') == ["help", body + '"\\']
    assert split_words("help " + "a" * 65_000) == ["help", "a" * 65_000]


def test_the_caps_are_bad_requests_on_the_wire() -> None:
    for line in ("help " + "a " * 40, "help " + "\\ " * 300, 'help "unclosed'):
        with pytest.raises(ProtocolError) as refused:
            parse_frame(line, TABLE)
        assert refused.value.code == "bad_request"
        assert refused.value.message.endswith("."), refused.value.message
