"""What ``pip install weir`` puts into an environment: one top-level name, ``weir``, with the
service folders and the generated protobuf modules beneath it, so Weir coexists with
distributions that own bare names like ``proto`` (proto-plus, used by the Google Cloud
clients and so by gcsfs for ``gs://`` checkpoints)."""

from __future__ import annotations

import importlib.metadata
import pathlib
import re
import subprocess
import sys
import venv
import zipfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SERVICE_FOLDERS = ("dispatcher", "resourcemanager", "jobmanager", "taskmanager", "proto")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(out),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    (found,) = out.glob("weir-*.whl")
    return found


def _names(wheel: pathlib.Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        return archive.namelist()


def test_the_only_top_level_name_is_weir(wheel):
    tops = {name.split("/")[0] for name in _names(wheel) if ".dist-info/" not in name}
    assert tops == {"weir"}
    with zipfile.ZipFile(wheel) as archive:
        (top_level,) = [n for n in archive.namelist() if n.endswith("top_level.txt")]
        assert archive.read(top_level).decode().split() == ["weir"]


def test_every_module_of_every_service_folder_is_in_the_wheel(wheel):
    """A package folder missing from pyproject's list would leave its modules out."""
    names = set(_names(wheel))
    for folder in ("weir", *SERVICE_FOLDERS):
        for path in (ROOT / folder).rglob("*.py"):
            rel = path.relative_to(ROOT).as_posix()
            installed = rel if folder == "weir" else f"weir/{rel}"
            assert installed in names, f"{rel} is not in the wheel as {installed}"


@pytest.mark.long  # a venv of its own and pip installs into it
def test_weir_and_proto_plus_import_side_by_side(wheel, tmp_path):
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    protobuf = importlib.metadata.version("protobuf")
    subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            f"protobuf=={protobuf}",
            "proto-plus",
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",
            str(wheel),
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    probe = """
import importlib.util
import proto
import weir.proto.common_pb2 as common


class Note(proto.Message):
    text = proto.Field(proto.STRING, number=1)


assert Note(text="hi").text == "hi"
assert common.Ack(ok=True).ok
for name in ("weir.dispatcher", "weir.resourcemanager", "weir.jobmanager", "weir.taskmanager"):
    assert importlib.util.find_spec(name) is not None, name
for bare in ("dispatcher", "resourcemanager", "jobmanager", "taskmanager"):
    assert importlib.util.find_spec(bare) is None, bare
print(proto.__file__)
"""
    result = subprocess.run(
        [str(python), "-c", probe], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("site-packages/proto/__init__.py")


_BARE_IMPORT = re.compile(
    r"^\s*(?:from|import)\s+(?:dispatcher|resourcemanager|jobmanager|taskmanager|proto)\b",
    re.MULTILINE,
)


def test_nothing_imports_the_bare_folder_names():
    offenders = []
    for folder in ("weir", *SERVICE_FOLDERS, "tests", "benchmarks", "examples", "deploy"):
        for path in (ROOT / folder).rglob("*.py"):
            if path.resolve() == pathlib.Path(__file__).resolve():
                continue  # its probe imports proto-plus's `proto` on purpose
            if _BARE_IMPORT.search(path.read_text(encoding="utf-8")):
                offenders.append(path.relative_to(ROOT).as_posix())
    assert not offenders, f"import these through weir.<name>: {offenders}"
