"""The one rule for text people type freely: event names, reasons and what players say.

Such text is shown to other people (the web page, the terminal client, a
spreadsheet), so it must read as what it is: no control characters, and none
of the invisible ones that reorder or hide text (bidirectional overrides and
isolates, zero-width joiners and spaces, the byte-order mark) or that look like
nothing at all (fillers, variation selectors, a blank braille cell). It is
stored in NFC so that two spellings of the same letters are one name.
"""

from __future__ import annotations

import re
import unicodedata

EVENT_NAME_MAX = 100
REASON_MAX = 200
TALK_MAX = 200  # a tell, a say or a shout
# The most code points one character's canonical decomposition has (U+1F82: alpha and three
# marks): NFC makes a text at most this many times shorter, so a text that many times longer
# than the limit is refused before any other work.
MAX_DECOMPOSITION = 4

# Control characters (C0 with tab and newline, DEL, C1), the line and paragraph separators and
# lone surrogates: searched in the whole text, surrounding whitespace included (NFC neither
# makes nor removes any of them).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
# Unicode's Default_Ignorable_Code_Point property (not in unicodedata), as listed in
# DerivedCoreProperties.txt (Unicode 14.0 to 16.0, unchanged): characters a renderer shows as
# nothing. Most are format characters (below) too; those that are not are the reason for this
# table: the combining grapheme joiner U+034F, the Hangul fillers U+115F U+1160 U+3164 U+FFA0,
# the Khmer inherent vowels U+17B4 U+17B5, the Mongolian free variation selectors
# U+180B-U+180D U+180F, the variation selectors U+FE00-U+FE0F and U+E0100-U+E01EF, and the
# reserved code points kept for more of them. Added to it, two characters drawn as a blank
# cell: the braille pattern blank U+2800 and the musical null notehead U+1D159.
_IGNORABLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f"
    "\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff"
    "\u2800\U0001d159]")
# Unicode's format characters (category Cf): every bidirectional mark (U+061C, U+200E/F,
# U+202A-U+202E, U+2066-U+2069), the zero-width ones (U+200B-U+200D, U+2060, U+FEFF), soft
# hyphens, tags. Too many for a pattern; none is whitespace, so only the stripped text is read.
_FORMAT = "Cf"


def clean_text(value: str, what: str, limit: int) -> str:
    """``value`` in NFC without surrounding whitespace; ``ValueError`` saying what is wrong.

    ``what`` names the text in the message ("REASON", "event"). The work is bounded by
    ``limit``, whatever the length of ``value``.
    """
    if len(value) > MAX_DECOMPOSITION * limit:
        raise ValueError(f"{what} is longer than {limit} characters")
    if (bad := _CONTROL.search(value)) is not None:
        raise ValueError(f"{what} contains a control character (U+{ord(bad.group()):04X})")
    text = unicodedata.normalize("NFC", value).strip()
    if not text:
        raise ValueError(f"{what} must not be empty")
    if len(text) > limit:
        raise ValueError(f"{what} is longer than {limit} characters")
    if not text.isprintable():  # also false for harmless spaces such as U+00A0: look closer
        for ch in text:
            if unicodedata.category(ch) == _FORMAT:
                raise ValueError(f"{what} contains an invisible formatting character "
                                 f"(U+{ord(ch):04X})")
    if (blank := _IGNORABLE.search(text)) is not None:  # printable, yet shown as nothing
        raise ValueError(f"{what} contains an invisible character (U+{ord(blank.group()):04X})")
    return text
