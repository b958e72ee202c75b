"""The job's Python dependencies on a TaskManager: what the client packed into the job's
configuration (``weir.graph.python_dependencies``) made importable or readable before the
job's functions are loaded, as PyFlink's Python workers prepare their environment.

- ``python.files``: unpacked once per host into a directory named after their content and
  put first on ``sys.path``, as PyFlink puts them on its worker's ``PYTHONPATH``.
- ``python.archives``: extracted into the job's working directory (the current directory
  of its task threads, ``job_resources``), each under its target directory, so that user
  code opens ``target/file`` by a relative path; removed with that directory.
- ``python.requirements``: installed with pip (``--no-index --find-links`` the shipped
  cache directory when there is one) into a directory named after the requirements, once
  per host, and put *last* on ``sys.path``. Unlike a PyFlink worker, a TaskManager is one
  process shared by every job and by Weir itself, so a requirement the TaskManager's
  Python already has (say another version of cloudpickle) does not replace it; one it
  lacks becomes importable.

Threading: called on task threads, which deploy concurrently; one lock makes each step
happen once, and directories appear by an atomic rename, so another process (another
TaskManager on the host) never sees one half-written.
"""

from __future__ import annotations

import base64
import hashlib
import io
import logging
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import zipfile
from collections.abc import Callable, Mapping

from weir.core import config
from weir.core.errors import ConfigurationError
from weir.core.python_archives import archive_format

__all__ = [
    "export_python_executable",
    "install_python_files",
    "install_python_requirements",
    "unpack_python_archives",
]

logger = logging.getLogger(__name__)

_LOCK = threading.Lock()
# pip resolving and installing a handful of packages takes seconds; one that has not
# finished in ten minutes is stuck (an index that does not answer), and the task fails
# saying so rather than hang its deployment.
_PIP_TIMEOUT_S = 600


def _host_directory(kind: str, data: bytes) -> str:
    """``{tmp}/{kind}/{digest}``, the digest over the names and contents of the zip's
    files, not its bytes: the same files zipped again (a new time stamp) reuse it."""
    digest = hashlib.sha256()
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for name in sorted(archive.namelist()):
            content = archive.read(name)
            digest.update(f"{name}\0{len(content)}\0".encode())
            digest.update(content)
    return os.path.join(tempfile.gettempdir(), kind, digest.hexdigest()[:16])


def _make_once(directory: str, fill: Callable[[str], None]) -> None:
    """``fill(partial)`` a new directory, then rename it to ``directory``, unless it is
    there already (made by this process before, or by another one)."""
    if os.path.isdir(directory):
        return
    os.makedirs(os.path.dirname(directory), exist_ok=True)
    partial = f"{directory}.{os.getpid()}.{threading.get_ident()}"
    try:
        fill(partial)
        os.rename(partial, directory)
    except OSError:
        if not os.path.isdir(directory):  # not another process having been first
            raise
    finally:
        shutil.rmtree(partial, ignore_errors=True)


def install_python_files(job_config: Mapping[str, str]) -> None:
    """Unpack the job's ``python.files`` once per host and put them first on
    ``sys.path``, so its functions import them as in PyFlink. The directory is named after
    the content, so jobs shipping the same files share it."""
    packed = job_config.get(config.PYTHON_FILES_ARCHIVE)
    if not packed:
        return
    data = base64.b64decode(packed)
    directory = _host_directory("weir-python-files", data)

    def fill(partial: str) -> None:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            archive.extractall(partial)  # noqa: S202 - a zip (members stay inside), the job's

    with _LOCK:
        _make_once(directory, fill)
        if directory not in sys.path:
            sys.path.insert(0, directory)


def export_python_executable(job_config: Mapping[str, str]) -> None:
    """Set the ``python`` environment variable to the job's ``python.executable``, where
    PyFlink's Python workers have it. The TaskManager runs its own Python whatever the
    value is; the environment is the process's, so jobs sharing a TaskManager see the
    value of the one that deployed a task last."""
    os.environ["python"] = config.get(job_config, config.PYTHON_EXECUTABLE)


def unpack_python_archives(job_config: Mapping[str, str]) -> None:
    """Extract the job's ``python.archives`` into the current directory (the job's working
    directory, on a task thread), each under its target directory; a target directory
    that is there already (another task of the job extracted it) is left as it is."""
    packed = job_config.get(config.PYTHON_ARCHIVES_PACKED)
    if not packed:
        return
    here = os.getcwd()
    with _LOCK, zipfile.ZipFile(io.BytesIO(base64.b64decode(packed))) as shipped:
        for entry in shipped.namelist():
            target, _, name = entry.partition("/")
            fmt = archive_format(name)
            if fmt is None:  # the client lets none through; a foreign entry is ignored
                logger.warning("python archive %r has no known format; not extracted", name)
                continue
            data = shipped.read(entry)

            def fill(partial: str, name: str = name, data: bytes = data, fmt: str = fmt) -> None:
                os.makedirs(partial)
                archive_file = os.path.join(partial, f".{name}")
                with open(archive_file, "wb") as out:
                    out.write(data)
                _extract(archive_file, partial, fmt)
                os.remove(archive_file)

            _make_once(os.path.join(here, target), fill)


def _extract(archive_file: str, directory: str, fmt: str) -> None:
    """The user's own archive, from the job's client. zipfile keeps members inside
    ``directory``; for tar files the "data" filter does (refusing absolute paths and links
    out of it) where this Python has it (3.11.4 on)."""
    if fmt == "zip":
        with zipfile.ZipFile(archive_file) as archive:
            archive.extractall(directory)  # noqa: S202 - a zip: members stay inside
        return
    with tarfile.open(archive_file) as archive:
        if hasattr(tarfile, "data_filter"):
            archive.extractall(directory, filter="data")
        else:  # pragma: no cover - Pythons before 3.11.4
            archive.extractall(directory)  # noqa: S202


def install_python_requirements(job_config: Mapping[str, str]) -> None:
    """Install the job's ``python.requirements`` with pip, once per host, and put them last
    on ``sys.path`` (see the module docstring). A pip failure fails the task with pip's
    own words."""
    packed = job_config.get(config.PYTHON_REQUIREMENTS_PACKED)
    if not packed:
        return
    data = base64.b64decode(packed)
    directory = _host_directory("weir-python-requirements", data)

    def fill(partial: str) -> None:
        source = f"{partial}.src"
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                archive.extractall(source)  # noqa: S202 - a zip (members stay inside), the job's
            _pip_install(source, partial)
        finally:
            shutil.rmtree(source, ignore_errors=True)

    with _LOCK:
        _make_once(directory, fill)
        if directory not in sys.path:
            sys.path.append(directory)


def _pip_install(source: str, target: str) -> None:
    requirements = os.path.join(source, "requirements.txt")
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-input"]
    command += ["--target", target, "-r", requirements]
    cache = os.path.join(source, "cache")
    if os.path.isdir(cache):
        # As PyFlink: only the shipped packages, and no index; building an sdist from the
        # cache uses the setuptools of the TaskManager's Python (no index to fetch one).
        command += ["--no-index", "--find-links", cache, "--no-build-isolation"]
    logger.info("installing python.requirements into %s", target)
    try:
        subprocess.run(command, check=True, capture_output=True, text=True, timeout=_PIP_TIMEOUT_S)
    except subprocess.CalledProcessError as exc:
        with open(requirements) as f:
            wanted = f.read().strip()
        msg = (
            f"python.requirements could not be installed on this TaskManager; pip said:\n"
            f"{(exc.stderr or exc.stdout or '').strip()[-3000:]}\n"
            f"requirements: {wanted!r}. Make them installable from the TaskManagers' "
            "package index, or ship them: env.set_python_requirements(requirements_file, "
            "cache_dir) with cache_dir filled by `pip download -d cache_dir -r "
            "requirements_file`"
        )
        raise ConfigurationError(msg) from None
    except subprocess.TimeoutExpired:
        msg = (
            f"python.requirements: pip did not finish within {_PIP_TIMEOUT_S} s on this "
            "TaskManager; is its package index reachable? Ship the packages with a cache "
            "directory (env.set_python_requirements(requirements_file, cache_dir))"
        )
        raise ConfigurationError(msg) from None
