"""The Dockerfile read as Docker reads it, for the tests that cannot build the image.

No base image can be pulled where the suite runs and no container engine runs there, so the
packaging tests take the final stage's instructions (``ENV``, ``COPY``, ``WORKDIR``,
``ENTRYPOINT``, ``CMD``, ``HEALTHCHECK``) and run them outside a container: :class:`ImageRoot`
puts the files the stage copies at their places under a folder and translates the image's
paths to it.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
from dataclasses import dataclass, field
from pathlib import Path

BASE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
"""PATH in the python:*-slim images, before the Dockerfile's ENV."""


@dataclass
class Stage:
    """One ``FROM`` and the instructions after it, each as (keyword, its text)."""

    base: str
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def all(self, keyword: str) -> list[str]:
        return [text for key, text in self.instructions if key == keyword]

    def last(self, keyword: str) -> str:
        found = self.all(keyword)
        assert found, f"the stage FROM {self.base} has no {keyword}"
        return found[-1]

    def env(self) -> dict[str, str]:
        """Every ``ENV KEY=VALUE`` in order, ``$NAME`` of an earlier one (or PATH) expanded."""
        env: dict[str, str] = {}
        for text in self.all("ENV"):
            for pair in shlex.split(text):
                key, sep, value = pair.partition("=")
                assert sep, f"ENV {text!r}: only the KEY=VALUE form is read here"
                env[key] = expand(value, {"PATH": BASE_PATH, **env})
        return env

    def copies(self) -> list[tuple[list[str], str]]:
        """Each ``COPY`` from the build context: its sources and its destination."""
        found = []
        for text in self.all("COPY"):
            words = shlex.split(text)
            if any(w.startswith("--from") for w in words):
                continue
            words = [w for w in words if not w.startswith("--")]
            found.append((words[:-1], words[-1]))
        return found

    def exec_form(self, keyword: str) -> list[str]:
        """``ENTRYPOINT``, ``CMD`` or ``HEALTHCHECK``'s command, in exec form (a JSON list)."""
        text = self.last(keyword)
        if keyword == "HEALTHCHECK":
            text = text.split(" CMD ", 1)[1] if " CMD " in text else text.removeprefix("CMD ")
        value = json.loads(text)
        assert isinstance(value, list) and all(isinstance(v, str) for v in value), text
        return value


def expand(value: str, known: dict[str, str]) -> str:
    """``$NAME`` and ``${NAME}`` in ``value`` replaced by ``known``'s (unknown: empty)."""
    return re.sub(r"\$\{?(\w+)\}?", lambda m: known.get(m.group(1), ""), value)


def stages(dockerfile: Path) -> list[Stage]:
    """The Dockerfile's stages: comments dropped, continued lines joined."""
    logical: list[str] = []
    pending = ""
    for raw in dockerfile.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        logical.append(pending + line)
        pending = ""
    found: list[Stage] = []
    for line in logical:
        keyword, _, text = line.partition(" ")
        keyword, text = keyword.upper(), " ".join(text.split())
        if keyword == "FROM":
            found.append(Stage(text))
        else:
            assert found, f"{line!r} before any FROM"
            found[-1].instructions.append((keyword, text))
    return found


class ImageRoot:
    """The final stage's files under ``root``: each ``COPY`` of the build context at its place,
    and the image's virtual environment (``python -m venv DIR``) standing for ``venv``."""

    def __init__(self, stage: Stage, context: Path, root: Path, venv: Path) -> None:
        self.stage, self.root = stage, root
        self.places: dict[str, Path] = {}
        for run in stage.all("RUN"):
            made = re.search(r"python -m venv (\S+)", run)
            if made:
                self.places[made.group(1)] = venv
        for sources, destination in stage.copies():
            for source in sources:
                target = root / destination.lstrip("/")
                if destination.endswith("/"):
                    target = target / Path(source).name
                target.parent.mkdir(parents=True, exist_ok=True)
                if (context / source).is_dir():
                    shutil.copytree(context / source, target)
                else:
                    shutil.copy2(context / source, target)
                self.places[destination.rstrip("/")] = target
        self.places[stage.last("WORKDIR")] = root / stage.last("WORKDIR").lstrip("/")
        self.places[stage.last("WORKDIR")].mkdir(parents=True, exist_ok=True)

    def path(self, image_path: str) -> str:
        """Where ``image_path`` (or a path under one of the image's places) stands here."""
        for place in sorted(self.places, key=len, reverse=True):
            if image_path == place or image_path.startswith(place + "/"):
                return str(self.places[place]) + image_path[len(place):]
        return image_path

    def search_path(self, image_path: str) -> str:
        """The image's PATH here: each folder's copied files first, then the folder itself."""
        folders: list[str] = []
        for folder in image_path.split(":"):
            copied = self.root / folder.lstrip("/")
            if copied.is_dir():
                folders.append(str(copied))
            folders.append(self.path(folder))
        return ":".join(folders)

    def environment(self, **overrides: str) -> dict[str, str]:
        """This process's environment without the repository on PYTHONPATH, then the stage's
        ``ENV`` with its paths translated, then ``overrides``."""
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        for key, value in self.stage.env().items():
            env[key] = self.search_path(value) if key == "PATH" else self.path(value)
        env.update(overrides)
        return env

    def command(self, *keywords: str) -> list[str]:
        """``ENTRYPOINT`` + ``CMD`` (or ``HEALTHCHECK``'s), each argument's paths translated."""
        return [self.path(arg) for keyword in keywords for arg in self.stage.exec_form(keyword)]

    @property
    def workdir(self) -> Path:
        return Path(self.path(self.stage.last("WORKDIR")))
