"""The plugin boundary, held over the whole repository by reading every module's imports.

- ``server.api`` imports nothing of the project outside itself: it is the whole contract.
- Nothing in ``server/`` or ``clients/`` imports the ratings plugin or a test plugin: the
  lobby finds plugins by entry point and never names one.
- The ratings plugin imports of the server only ``server.api`` (and its modules).
- Each test plugin (tests/plugins/*) imports of the project only ``server.api`` itself, as an
  outside author's package would.

Imports are read with ``ast``: ``import x``, ``from x import y`` (relative ones resolved), and
``import_module``/``__import__`` of a literal name.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TEST_PLUGINS = sorted(p.parent for p in (ROOT / "tests" / "plugins").glob("*/pyproject.toml"))
PLUGIN_PACKAGES = sorted(d.name for p in TEST_PLUGINS for d in p.iterdir()
                         if (d / "__init__.py").is_file())
PROJECT = ("server", "clients", "ratings_plugin", *PLUGIN_PACKAGES)


def modules(folder: Path) -> Iterator[Path]:
    return (p for p in sorted(folder.rglob("*.py"))
            if not {"build", "__pycache__"} & set(p.relative_to(folder).parts))


def package_of(path: Path, root: Path) -> str:
    """The package a module is in (an ``__init__.py``: its own), where relative imports start."""
    return ".".join(path.relative_to(root).parts[:-1])


def imports(path: Path, root: Path) -> set[str]:
    """Every module ``path`` imports, of the project only (``root``: where its package starts)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package_of(path, root).split(".")
                base = base[:len(base) - node.level + 1]
                found.add(".".join([*base, *([node.module] if node.module else [])]))
            elif node.module:
                found.add(node.module)
        elif (isinstance(node, ast.Call) and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
              and getattr(node.func, "id", getattr(node.func, "attr", None))
              in ("import_module", "__import__")):
            found.add(node.args[0].value)
    return {m for m in found if m.split(".")[0] in PROJECT}


def offences(folder: Path, root: Path, allowed: str) -> list[str]:
    """Each of the folder's project imports that does not match ``allowed`` (a predicate's name)."""
    rule = RULES[allowed]
    return [f"{p.relative_to(ROOT)}: imports {m}" for p in modules(folder)
            for m in sorted(imports(p, root)) if not rule(m)]


RULES: dict[str, Callable[[str], bool]] = {
    "api": lambda m: m == "server.api" or m.startswith("server.api."),
    "lobby": lambda m: m.split(".")[0] in ("server", "clients"),
    "ratings": lambda m: (m.split(".")[0] == "ratings_plugin" or m == "server.api"
                          or m.startswith("server.api.")),
}


def test_server_api_imports_nothing_of_the_project_but_itself() -> None:
    assert offences(ROOT / "server" / "api", ROOT, "api") == []


@pytest.mark.parametrize("folder", ["server", "clients"])
def test_the_lobby_and_its_clients_name_no_plugin(folder: str) -> None:
    assert offences(ROOT / folder, ROOT, "lobby") == []


def test_the_ratings_plugin_imports_only_server_api_of_the_server() -> None:
    assert offences(ROOT / "ratings_plugin", ROOT, "ratings") == []


@pytest.mark.parametrize("plugin", TEST_PLUGINS, ids=lambda p: p.name)
def test_a_test_plugin_imports_only_server_api_of_the_project(plugin: Path) -> None:
    own = {d.name for d in plugin.iterdir() if (d / "__init__.py").is_file()}
    found = {m for p in modules(plugin) for m in imports(p, plugin)}
    assert own and {m for m in found if m.split(".")[0] not in own} <= {"server.api"}, found


def test_the_rules_see_a_forbidden_import(tmp_path: Path) -> None:
    """The reading itself: a module naming the ratings plugin, directly, relatively or by
    ``import_module``, is caught."""
    package = tmp_path / "server" / "lobby"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "bad.py").write_text("import ratings_plugin.plugin\n"
                                    "from importlib import import_module\n"
                                    "import_module('matchlobby_streaks')\n"
                                    "from ..api import storage\n")
    assert imports(package / "bad.py", tmp_path) == {
        "ratings_plugin.plugin", "matchlobby_streaks", "server.api"}
    assert RULES["lobby"]("ratings_plugin.plugin") is False
    assert RULES["lobby"]("matchlobby_streaks") is False
