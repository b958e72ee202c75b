"""The client's Python environment packed for a YARN session (``yarn.ship-environment``), as
venv-pack packs one: a ``.tar.gz`` of the virtual environment that YARN unpacks in every
container as ``./environment`` (``spark.archives``), run as ``./environment/bin/python``.
A Hadoop cluster then needs only Java and, at the same path as on the client, the Python
the environment was made from (its ``bin/python`` links to it, as venv-pack's does).

What differs from venv-pack, and why:

- Spark's jars (``pyspark/jars``, some 460 MB) stay out: every container gets Spark's jars
  from YARN (``spark.yarn.jars`` / ``spark.yarn.archive``), and PySpark's Python from
  ``pyspark.zip``.
- An editable Weir (``pip install -e``, a development checkout) is built into a wheel and
  packed as installed: the containers have no checkout to point to. Another editable
  package is refused, naming it.
- Caches (``__pycache__``) and ``share/`` (the driver's class-data archive) stay out.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from weir.core.errors import ConfigurationError

logger = logging.getLogger(__name__)

# Fast over small: the archive is written once per session start and read once per
# container, and level 1 gets most of gzip's size at a fraction of its time.
_GZIP_LEVEL = 1
_EXCLUDED_DIRS = frozenset({"__pycache__"})
# Building Weir's wheel from a checkout takes seconds; a loaded machine gets minutes.
_WHEEL_TIMEOUT_S = 600


@dataclass(frozen=True, slots=True)
class PackedEnvironment:
    """The archive, and what packing it cost."""

    path: Path
    size_bytes: int
    files: int
    seconds: float


def _editable_distributions() -> dict[str, str]:
    """Installed editable distributions: name -> source directory."""
    found = {}
    for dist in metadata.distributions():
        text = dist.read_text("direct_url.json")
        if not text:
            continue
        try:
            direct = json.loads(text)
        except ValueError:
            continue
        if direct.get("dir_info", {}).get("editable"):
            url = str(direct.get("url", ""))
            found[dist.metadata["Name"].lower()] = url.removeprefix("file://")
    return found


def _site_packages(prefix: Path) -> Path:
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    return prefix / "lib" / version / "site-packages"


def _build_wheel(source: str, target: Path) -> Path:
    """A wheel of the checkout at ``source`` (the package as pip would install it)."""
    result = subprocess.run(
        [
            *(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps"),
            *("--no-build-isolation", "-w", str(target), source),
        ],
        capture_output=True,
        text=True,
        timeout=_WHEEL_TIMEOUT_S,
        check=False,
    )
    wheels = list(target.glob("*.whl"))
    if result.returncode != 0 or len(wheels) != 1:
        msg = f"could not build a wheel of {source} to ship it:\n{result.stderr[-2000:]}"
        raise ConfigurationError(msg)
    return wheels[0]


def _walk(root: Path) -> Iterator[Path]:
    for directory, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _EXCLUDED_DIRS)
        base = Path(directory)
        for name in sorted(files):
            yield base / name
        for name in dirs:
            if (base / name).is_symlink():
                yield base / name


def pack_environment(target_dir: Path | None = None) -> PackedEnvironment:
    """Pack the running interpreter's virtual environment into
    ``target_dir/weir-environment.tar.gz`` (a new temporary directory by default).
    Raises ConfigurationError when it cannot be shipped as it is."""
    prefix = Path(sys.prefix)
    if sys.prefix == sys.base_prefix:
        msg = (
            f"{sys.executable} runs in no virtual environment: create one (python -m venv), "
            "install Weir there, and start the session from it to ship it"
        )
        raise ConfigurationError(msg)
    editable = _editable_distributions()
    others = sorted(name for name in editable if name != "weir")
    if others:
        msg = (
            f"editable installs cannot be shipped: {', '.join(others)}; install them "
            "normally (pip install <dir>) in the environment to ship"
        )
        raise ConfigurationError(msg)
    started = time.monotonic()
    target = Path(target_dir or tempfile.mkdtemp(prefix="weir-environment-"))
    target.mkdir(parents=True, exist_ok=True)
    archive = target / "weir-environment.tar.gz"
    site = _site_packages(prefix)
    skipped = {site / "pyspark" / "jars", prefix / "share"}
    count = 0
    with tempfile.TemporaryDirectory(prefix="weir-wheel-") as scratch:
        wheel = _build_wheel(editable["weir"], Path(scratch)) if "weir" in editable else None
        with tarfile.open(archive, "w:gz", compresslevel=_GZIP_LEVEL) as tar:
            for path in _walk(prefix):
                if any(path == s or s in path.parents for s in skipped):
                    continue
                if (
                    wheel is not None
                    and path.parent == site
                    and path.name.startswith(("__editable__.weir-", "__editable___weir_", "weir-"))
                ):
                    continue  # the editable hooks and metadata; the wheel's replace them
                if (
                    wheel is not None
                    and path.parent.parent == site
                    and path.parent.name.startswith("weir-")
                ):
                    continue
                tar.add(path, arcname=str(path.relative_to(prefix)), recursive=False)
                count += 1
            if wheel is not None:
                count += _add_wheel(tar, wheel, site.relative_to(prefix))
    packed = PackedEnvironment(
        archive, archive.stat().st_size, count, round(time.monotonic() - started, 1)
    )
    logger.info(
        "packed %s: %d files, %.1f MB in %.1f s",
        archive,
        packed.files,
        packed.size_bytes / 1e6,
        packed.seconds,
    )
    return packed


def _add_wheel(tar: tarfile.TarFile, wheel: Path, site: Path) -> int:
    """Add a wheel's files under ``site`` as pip would install them (a pure-Python wheel:
    its files go to site-packages as they are)."""
    count = 0
    with zipfile.ZipFile(wheel) as archive:
        for info in archive.infolist():
            if info.is_dir():
                continue
            member = tarfile.TarInfo(str(site / info.filename))
            member.size = info.file_size
            member.mode = 0o644
            member.mtime = int(time.time())
            with archive.open(info) as data:
                tar.addfile(member, data)
            count += 1
    return count
