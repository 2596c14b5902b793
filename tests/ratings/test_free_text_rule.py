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


# Default_Ignorable_Code_Point in DerivedCoreProperties.txt (Unicode 14.0-16.0) that are not
# format characters (Cf), with the two blank cells; each is refused wherever it stands.
IGNORABLE_NOT_FORMAT = [0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x180B, 0x180C, 0x180D, 0x180F,
                        0x2065, 0x3164, *range(0xFE00, 0xFE10), 0xFFA0, *range(0xFFF0, 0xFFF9),
                        0xE0000, *range(0xE0002, 0xE0020), *range(0xE0080, 0xE0100),
                        *range(0xE0100, 0xE01F0), 0xE01F0, 0xE0FFF, 0x2800, 0x1D159]


@pytest.mark.parametrize("where", ["{}Brno", "Brno{}Open", "Brno{}", "{}"])
def test_invisible_characters_that_are_not_format_characters_are_refused(where: str) -> None:
    for code in IGNORABLE_NOT_FORMAT:
        assert unicodedata.category(chr(code)) != "Cf"
        with pytest.raises(ValueError, match=rf"NAME contains an invisible character \(U\+{code:04X}\)"):
            clean_text(where.format(chr(code)), "NAME", 100)


def test_their_visible_neighbours_are_kept() -> None:
    for text in ("\u1100\u1161", "\u1161", "\u3165", "\uffa1", "\u2801", "\u17b6", "\u180a",
                 "\ufe10", "\u034e", "\u2764", "\U0001d158"):
        assert clean_text(f"a{text}b", "NAME", 100) == unicodedata.normalize("NFC", f"a{text}b")
