"""The server uses aiosqlite through its public interface only.

Every private name of aiosqlite's ``Connection`` and ``Cursor`` (their own
attributes and those their ``__init__`` sets, read from a live connection) is
looked for as an attribute of anything but ``self`` in every server module
that imports aiosqlite, and no server class may derive from an aiosqlite class.
"""

from __future__ import annotations

import ast
from pathlib import Path

import aiosqlite

SERVER = Path(__file__).resolve().parents[2] / "server"


async def _private_names(tmp_path: Path) -> set[str]:
    conn = await aiosqlite.connect(tmp_path / "p.db")
    try:
        async with conn.execute("SELECT 1") as cursor:
            objects: list[object] = [conn, cursor]
            names = {n for o in objects for n in (*vars(type(o)), *vars(o))}
    finally:
        await conn.close()
    return {n for n in names if n.startswith("_") and not n.startswith("__")}


def _imports_aiosqlite(tree: ast.Module) -> bool:
    return any((isinstance(node, ast.Import) and any(a.name == "aiosqlite" for a in node.names))
               or (isinstance(node, ast.ImportFrom) and node.module == "aiosqlite")
               for node in ast.walk(tree))


async def test_no_server_module_reaches_into_aiosqlite(tmp_path: Path) -> None:
    private = await _private_names(tmp_path)
    assert {"_conn", "_execute", "_iter_chunk_size", "_connection"} <= private
    found = []
    checked = 0
    for path in sorted(SERVER.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if not _imports_aiosqlite(tree):
            continue
        checked += 1
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and node.attr in private
                    and ast.unparse(node.value) != "self"):  # a class's own names are its own
                found.append(f"{path.relative_to(SERVER)}:{node.lineno} .{node.attr}")
            if isinstance(node, ast.ClassDef):
                for base in node.bases:
                    if "aiosqlite" in ast.unparse(base):
                        found.append(f"{path.relative_to(SERVER)}:{node.lineno} "
                                     f"class {node.name}({ast.unparse(base)})")
    assert checked > 0  # the reader, at least, is an aiosqlite connection
    assert found == []
