"""Side environments for the peer benchmarks: one virtual environment per peer, outside
the repository, made once and reused, and the runs of a peer's script in its own.

The environments live under ``$WEIR_BENCH_PEERS`` (default ``~/.cache/weir-bench/peers``),
one folder per ``SideEnv``; a stamp file in each records the requirements it was made
with, and a folder whose stamp differs (or that has none: an interrupted install) is made
again. A lock file per environment serialises two benchmarks making the same one.

PyFlink's environment (``pyflink``) holds only PyFlink's Python dependencies: PyFlink itself
(its Python package and its jars) is the test suite's install of ``apache-flink`` made
without them (``tests/e2e/flink_clients.py``), put on the environment's ``sys.path`` by a
``.pth`` file.
"""

from __future__ import annotations

import fcntl
import json
import os
import pathlib
import re
import shutil
import subprocess
import sysconfig
import venv
from dataclasses import dataclass
from importlib.metadata import Distribution

HERE = pathlib.Path(__file__).resolve().parent
STAMP = "weir-bench-requirements.txt"
# Variables of the calling environment that would point a side environment's Python or
# Spark at Weir's own installation.
FOREIGN = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "SPARK_HOME", "SPARK_CONF_DIR")
FOREIGN_PREFIXES = ("PYSPARK_",)


@dataclass(frozen=True, slots=True)
class SideEnv:
    """A named virtual environment with the given pip requirements, and folders put on
    its ``sys.path`` (``paths``)."""

    name: str
    requirements: tuple[str, ...]
    paths: tuple[str, ...] = ()


NUMPY = SideEnv("numpy", ("numpy",))
BYTEWAX = SideEnv("bytewax-0.21", ("bytewax==0.21.*", "numpy"))
PYSPARK = SideEnv("pyspark-4.3", ("pyspark==4.3.*",))


def pyflink(install: pathlib.Path) -> SideEnv:
    """PyFlink's environment for ``install``, an install of ``apache-flink`` made with
    ``pip install --no-deps --target install``: the requirements of its metadata (but
    ``apache-flink-libraries``, its jars, already there), ``install`` on ``sys.path``."""
    (metadata,) = install.glob("apache_flink-*.dist-info")
    distribution = Distribution.at(metadata)
    requirements = tuple(
        requirement
        for requirement in distribution.requires or ()
        if re.match(r"apache[-_.]flink[-_.]libraries\b", requirement, re.IGNORECASE) is None
    )
    return SideEnv(f"pyflink-{distribution.version}", requirements, (str(install),))


def cache_dir() -> pathlib.Path:
    return pathlib.Path(
        os.environ.get("WEIR_BENCH_PEERS", "~/.cache/weir-bench/peers")
    ).expanduser()


def python(env: SideEnv) -> pathlib.Path:
    """The Python of ``env``'s environment, making the environment first if needed."""
    root = cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    folder = root / env.name
    wanted = "\n".join(env.requirements + env.paths) + "\n"
    with open(root / f"{env.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        stamp = folder / STAMP
        if not stamp.exists() or stamp.read_text() != wanted:
            _make(folder, env)
            stamp.write_text(wanted)
    return folder / "bin" / "python"


def _make(folder: pathlib.Path, env: SideEnv) -> None:
    print(f"making the side environment {folder}: {' '.join(env.requirements)}", flush=True)
    shutil.rmtree(folder, ignore_errors=True)
    venv.create(folder, with_pip=True, clear=True)
    result = subprocess.run(
        [folder / "bin" / "python", "-m", "pip", "install", "--quiet", *env.requirements],
        capture_output=True,
        text=True,
        check=False,
        env=_child_environment(),
    )
    if result.returncode:
        msg = (
            f"pip could not install {' '.join(env.requirements)} into {folder} (exit "
            f"{result.returncode}):\n{result.stderr[-4000:]}\nCheck that the package index "
            "is reachable, or remove the folder and try again."
        )
        raise RuntimeError(msg)
    if env.paths:
        site = sysconfig.get_path("purelib", vars={"base": str(folder), "platbase": str(folder)})
        pathlib.Path(site, "weir-bench-paths.pth").write_text("\n".join(env.paths) + "\n")


def _child_environment() -> dict[str, str]:
    return {
        key: value
        for key, value in os.environ.items()
        if key not in FOREIGN and not key.startswith(FOREIGN_PREFIXES)
    }


def run(env: SideEnv, script: str, args: list[str], timeout_s: float = 900) -> dict:
    """Runs ``script`` (a file beside this one) with ``args`` in ``env``'s environment and
    returns the JSON object it printed last on stdout."""
    command = [str(python(env)), str(HERE / script), *args]
    try:
        result = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
            env=_child_environment(),
            cwd=HERE,
        )
    except subprocess.TimeoutExpired as exc:
        msg = f"{' '.join(command[1:])} ran past {timeout_s:.0f} s; give it fewer events"
        raise RuntimeError(msg) from exc
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    if result.returncode or not lines:
        msg = (
            f"{' '.join(command[1:])} exited with {result.returncode} without a result "
            f"line; its output ends with:\n{result.stdout[-2000:]}{result.stderr[-4000:]}"
        )
        raise RuntimeError(msg)
    return json.loads(lines[-1])


if __name__ == "__main__":
    for side_env in (NUMPY, BYTEWAX, PYSPARK):
        print(side_env.name, python(side_env))
