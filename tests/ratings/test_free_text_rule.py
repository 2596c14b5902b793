"""The rule of free text (server/api/text.py) as a function: the cases the servers
and ``matchlobby rate`` tests cannot reach easily (the bound on its work, NFC at the limit)."""

from __future__ import annotations

import sys
import unicodedata

import pytest

from server.api.text import MAX_DECOMPOSITION, clean_text


def test_no_character_decomposes_into_more_than_the_bound() -> None:
    """What lets a text longer than ``MAX_DECOMPOSITION × limit`` be refused unread."""
    longest = max(len(unicodedata.normalize("NFD", chr(c))) for c in range(sys.maxunicode + 1)
                  if unicodedata.decomposition(chr(c)))
    assert longest == MAX_DECOMPOSITION


def test_a_text_that_composes_to_the_limit_is_accepted() -> None:
    greek = "\u03b1\u0313\u0300\u0345"  # U+1F82 decomposed: four code points, one character
    assert unicodedata.normalize("NFC", greek) == "\u1f82"
    assert clean_text(greek * 200, "REASON", 200) == "\u1f82" * 200
    with pytest.raises(ValueError, match="longer than 200"):
        clean_text(greek * 201, "REASON", 200)


@pytest.mark.parametrize("value", [" " * 10_000 + "x", "x" + "\u00a0" * 60_000, "\u200b" * 60_000,
                                   "e\u0301" * 30_000])
def test_huge_values_are_refused_by_length_first(value: str) -> None:
    with pytest.raises(ValueError, match="REASON is longer than 200 characters"):
        clean_text(value, "REASON", 200)


def test_what_is_kept() -> None:
    assert clean_text("  Brno\u00a0Open  ", "NAME", 100) == "Brno\u00a0Open"  # inner spaces stay
    assert clean_text("Zápas 👍 ١٢٣ עברית", "NAME", 100) == "Zápas 👍 ١٢٣ עברית"
    assert clean_text("Cafe\u0301", "NAME", 100) == "Café"
    with pytest.raises(ValueError, match=r"U\+200D"):  # emoji sequences joined by ZWJ too
        clean_text("👩\u200d💻", "NAME", 100)
    with pytest.raises(ValueError, match=r"U\+00AD"):  # a soft hyphen is invisible as well
        clean_text("Brno\u00adOpen", "NAME", 100)
