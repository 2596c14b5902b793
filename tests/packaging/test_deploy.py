"""The service and container files in deploy/, checked as far as this machine allows.

- **systemd.** ``systemd-analyze verify`` on the unit, its ``ExecStart`` pointed at this
  environment's ``matchlobby`` (the unit's own ``/opt/matchlobby`` does not exist here), with
  no warning about the unit; and the settings an operator relies on.
- **Compose.** Both files are read as YAML: only keys compose knows, the services, the image's
  health check, the mounted files, distinct node names behind the balancer. ``docker compose
  config`` validates them too where Docker's compose plugin is installed (it needs no daemon).
- **Health check.** The address it asks, from the server's configuration.
- **Image.** The Dockerfile's user, port and volume agree with the configuration it copies, and
  the build context (.dockerignore) lets through everything it copies.
"""

from __future__ import annotations

import configparser
import importlib.util
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from testkit.constants import ROOT
from testkit.dockerfile import stages

DEPLOY = ROOT / "deploy"
UNIT = DEPLOY / "matchlobby.service"
INSTALLED_AT = "/opt/matchlobby/bin/matchlobby"
IMAGE_HEALTHCHECK = stages(ROOT / "Dockerfile")[-1].exec_form("HEALTHCHECK")


def unit() -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None, strict=True)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(UNIT.read_text())
    return parser


def seconds(value: str) -> float:
    """A duration as systemd or compose writes it: ``40``, ``40s``, ``1m``."""
    number, unit_ = re.fullmatch(r"(\d+(?:\.\d+)?)\s*(ms|s|m|min)?", value.strip()).groups()  # type: ignore[union-attr]
    return float(number) * {"ms": 0.001, "m": 60, "min": 60}.get(unit_ or "s", 1)


def compose(name: str) -> dict[str, Any]:
    data = yaml.safe_load((DEPLOY / name).read_text())
    assert isinstance(data, dict)
    return data


def test_the_unit_verifies(tmp_path: Path) -> None:
    verify = shutil.which("systemd-analyze")
    if verify is None:
        pytest.skip("systemd-analyze is missing (make system-packages installs it as root)")
    here = Path(sys.prefix) / "bin" / "matchlobby"
    assert here.is_file()
    text = UNIT.read_text()
    assert f"ExecStart={INSTALLED_AT} " in text
    copy = tmp_path / "matchlobby.service"
    copy.write_text(text.replace(INSTALLED_AT, str(here)))
    done = subprocess.run([verify, "verify", str(copy)], capture_output=True, text=True, timeout=60)
    about_it = [line for line in (done.stdout + done.stderr).splitlines() if "matchlobby" in line]
    assert done.returncode == 0 and not about_it, done.stdout + done.stderr


def test_the_unit_stops_gently_reloads_and_is_confined() -> None:
    service = unit()["Service"]
    assert service["ExecStart"] == f"{INSTALLED_AT} serve --config /etc/matchlobby/matchlobby.toml"
    assert service["User"] not in ("", "root", "0")
    assert service["ExecReload"] == "/bin/kill -HUP $MAINPID"
    assert service["KillSignal"] == "SIGTERM"
    assert service["Restart"] == "on-failure"
    assert int(service["LimitNOFILE"]) >= 65536
    assert service["NoNewPrivileges"] == "yes" and service["ProtectSystem"] == "strict"
    state = f"/var/lib/{service['StateDirectory']}"
    assert service["WorkingDirectory"] == state
    assert state in service["ReadWritePaths"].split()
    # the same time to finish after SIGTERM wherever the lobby runs
    for name in ("compose.sqlite.yml", "compose.postgres.yml"):
        for service_name, svc in compose(name)["services"].items():
            if "stop_grace_period" in svc:
                assert seconds(svc["stop_grace_period"]) == seconds(service["TimeoutStopSec"]), \
                    (name, service_name)


def lobby_services(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {name: svc for name, svc in data["services"].items()
            if str(svc.get("image", "")).startswith("matchlobby")}


def mounts(svc: dict[str, Any]) -> dict[str, Path]:
    """A service's bind mounts: where in the container, from which file of the repository."""
    found = {}
    for volume in svc.get("volumes", []):
        source, target = volume.split(":")[:2]
        if source.startswith("."):
            found[target] = (DEPLOY / source).resolve()
    return found


def test_the_sqlite_compose_file_runs_one_lobby_on_a_volume() -> None:
    data = compose("compose.sqlite.yml")
    [lobby] = lobby_services(data).values()
    assert lobby["build"]["context"] == ".." and (DEPLOY / "..").resolve() == ROOT
    assert (ROOT / lobby["build"]["dockerfile"]).is_file()
    volume, target = lobby["volumes"][0].split(":")
    assert volume in data["volumes"] and target == "/data"
    assert lobby["healthcheck"]["test"] == ["CMD", *IMAGE_HEALTHCHECK]
    assert lobby["ports"] == ["8765:8765"]


def test_the_postgres_compose_file_runs_named_nodes_behind_the_balancer() -> None:
    data = compose("compose.postgres.yml")
    services = data["services"]
    nodes = lobby_services(data)
    assert len(nodes) >= 2
    pg = services["postgres"]
    assert "pg_isready" in " ".join(pg["healthcheck"]["test"])
    names = set()
    for node in nodes.values():
        config_file = mounts(node)["/etc/matchlobby/matchlobby.toml"]
        config = tomllib.loads(config_file.read_text())
        names.add(config["server"]["node"])
        assert config["server"]["port"] == 8765
        assert config["limits"]["connections_per_address"] > 64  # all through one address
        command = node["command"]
        url = command[command.index("--db") + 1]
        env = pg["environment"]
        # the password in the environment, not on the command line (ps, docker inspect)
        assert url == f"postgresql://{env['POSTGRES_USER']}@postgres:5432/{env['POSTGRES_DB']}"
        assert node["environment"]["PGPASSWORD"] == env["POSTGRES_PASSWORD"]
        assert node["depends_on"]["postgres"]["condition"] == "service_healthy"
        assert node["healthcheck"]["test"] == ["CMD", *IMAGE_HEALTHCHECK]
    assert len(names) == len(nodes), names

    balancer = services["balancer"]
    cfg = mounts(balancer)["/usr/local/etc/haproxy/haproxy.cfg"]
    assert cfg == ROOT / "docs" / "haproxy.cfg"
    wanted = set(re.findall(r'"\$\{(\w+)\}"', cfg.read_text()))
    assert wanted <= set(balancer["environment"]), wanted
    servers = {balancer["environment"][v] for v in wanted if v.startswith("NODE")}
    assert servers == {f"{name}:8765" for name in nodes}
    assert {n: c["condition"] for n, c in balancer["depends_on"].items()} == \
        dict.fromkeys(nodes, "service_healthy")
    assert balancer["healthcheck"]["test"]


def test_no_example_puts_the_database_password_on_a_command_line() -> None:
    for path in (DEPLOY / "compose.postgres.yml", ROOT / "docs" / "OPERATING.md",
                 ROOT / "README.md"):
        for line in path.read_text().splitlines():
            assert not re.search(r"postgresql://[^@/\s]*:\$", line), (path.name, line)


TOP_KEYS = {"name", "services", "volumes", "networks", "configs", "secrets"}
SERVICE_KEYS = {"build", "image", "command", "entrypoint", "environment", "env_file", "ports",
                "expose", "volumes", "restart", "stop_grace_period", "stop_signal", "ulimits",
                "healthcheck", "depends_on", "user", "working_dir", "networks", "hostname",
                "labels", "logging", "read_only", "tmpfs", "cap_drop", "security_opt"}
HEALTHCHECK_KEYS = {"test", "interval", "timeout", "start_period", "start_interval", "retries",
                    "disable"}


@pytest.mark.parametrize("name", ["compose.sqlite.yml", "compose.postgres.yml"])
def test_the_compose_files_use_only_keys_compose_knows(name: str) -> None:
    """Compose refuses a key it does not know; its plugin is not here to say so (below)."""
    data = compose(name)
    assert {k for k in data if not k.startswith("x-")} <= TOP_KEYS
    for service_name, svc in data["services"].items():
        assert set(svc) <= SERVICE_KEYS, (service_name, set(svc) - SERVICE_KEYS)
        assert set(svc.get("healthcheck", {})) <= HEALTHCHECK_KEYS, service_name
        for dependency in svc.get("depends_on", {}):
            assert dependency in data["services"], (service_name, dependency)
        for volume in svc.get("volumes", []):
            source = volume.split(":")[0]
            assert source.startswith((".", "/")) or source in data.get("volumes", {}), volume


@pytest.mark.parametrize("name", ["compose.sqlite.yml", "compose.postgres.yml"])
def test_docker_compose_accepts_the_file(name: str) -> None:
    docker = shutil.which("docker")
    if docker is None or subprocess.run([docker, "compose", "version"], capture_output=True,
                                        timeout=60).returncode != 0:
        pytest.skip("Docker's compose plugin is not installed")
    done = subprocess.run([docker, "compose", "-f", str(DEPLOY / name), "config", "--quiet"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def load_healthcheck() -> Any:
    spec = importlib.util.spec_from_file_location("healthcheck", DEPLOY / "healthcheck.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("config", "url"), [
    ("", "http://127.0.0.1:8765/healthz"),
    ('[server]\nhost = "0.0.0.0"\nport = 9000\n', "http://127.0.0.1:9000/healthz"),
    ('[server]\nhost = "::"\n', "http://[::1]:8765/healthz"),
    ('[server]\nhost = "10.1.2.3"\nport = 443\n[tls]\ncertificate = "c.pem"\nkey = "k.pem"\n',
     "https://10.1.2.3:443/healthz"),
])
def test_the_health_check_asks_the_servers_own_address(tmp_path: Path, config: str,
                                                       url: str) -> None:
    path = tmp_path / "matchlobby.toml"
    path.write_text(config)
    assert load_healthcheck().health_url(str(path), "/healthz") == url


def test_the_image_runs_unprivileged_with_its_database_on_the_volume() -> None:
    stage = stages(ROOT / "Dockerfile")[-1]
    user = stage.last("USER").split(":")[0]
    assert user not in ("root", "0")
    copied = {destination: sources for sources, destination in stage.copies()}
    config_at = stage.env()["MATCHLOBBY_CONFIG"]
    config = tomllib.loads((ROOT / copied[config_at][0]).read_text())
    assert stage.last("EXPOSE") == str(config["server"]["port"])
    assert Path(config["server"]["database"]).parent == Path(stage.last("VOLUME").strip('[]"'))
    assert config_at in stage.exec_form("CMD")
    context = [line[1:] for line in (ROOT / ".dockerignore").read_text().splitlines()
               if line.startswith("!")]
    every_copy = [s for st in stages(ROOT / "Dockerfile") for sources, _ in st.copies() for s in sources]
    for source in every_copy:
        assert any(source == c or source.startswith(c + "/") for c in context), source


def test_the_health_check_without_its_configuration_says_so_in_one_line(tmp_path: Path) -> None:
    for config in (tmp_path / "absent.toml", tmp_path / "broken.toml"):
        if config.name == "broken.toml":
            config.write_text("[server\n")
        ran = subprocess.run([sys.executable, str(ROOT / "deploy" / "healthcheck.py")],
                             env={"MATCHLOBBY_CONFIG": str(config), "PATH": "/usr/bin:/bin"},
                             capture_output=True, text=True, timeout=60)
        assert ran.returncode == 1
        assert ran.stderr.startswith(f"matchlobby health check: cannot read the configuration "
                                     f"{config}: "), ran.stderr
        assert "Traceback" not in ran.stderr and len(ran.stderr.splitlines()) == 1
