"""CSV cells a spreadsheet will not run: the escape every CSV the project writes uses, and its
inverse, which the results-file reader applies.

A spreadsheet opening a CSV runs a cell starting with ``=``, ``+``, ``-``, ``@``, tab or
carriage return (after spaces, which some skip) as a formula: an event named
``=HYPERLINK(...)``, a player named ``-A1-B1x``. OWASP's advice on CSV injection is a leading
``'``, which spreadsheets show as text. A text that already starts with ``'`` before such a
cell is escaped too, so that taking one ``'`` off gives back exactly what was written. Only
text is escaped: numbers (a negative rating) stay numbers.
"""

from __future__ import annotations

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def needs_escape(text: str) -> bool:
    rest = text.lstrip(" ")
    if rest.startswith(FORMULA_START):
        return True
    return rest.startswith("'") and needs_escape(rest[1:])


def escape(text: str) -> str:
    """``text`` as a cell a spreadsheet shows as text."""
    return "'" + text if needs_escape(text) else text


def unescape(cell: str) -> str:
    """The text :func:`escape` made ``cell`` from (a cell it did not change is that text)."""
    return cell[1:] if cell.startswith("'") and needs_escape(cell[1:]) else cell
