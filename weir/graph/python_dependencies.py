"""The job's Python dependencies as the client ships them: the ``python.files``,
``python.archives`` and ``python.requirements`` a program set (``env.add_python_file``,
``add_python_archive``, ``set_python_requirements``), each packed into the job's
configuration as one base64-encoded zip, which the TaskManagers unpack
(``weir.taskmanager.python_dependencies``). Paths are read here, on the client, where
they name files: TaskManagers may run on other hosts.
"""

from __future__ import annotations

import base64
import io
import os
import zipfile
from collections.abc import Iterator

from weir.core.python_archives import archive_format

__all__ = [
    "pack_python_archives",
    "pack_python_files",
    "pack_python_requirements",
]

REQUIREMENTS_FILE = "requirements.txt"
"""Where a packed python.requirements keeps the requirements file; its cached packages
are under ``cache/``."""


def _entries(value: str) -> Iterator[str]:
    return (e.strip() for e in value.split(",") if e.strip())


def _local(path: str) -> str:
    return path.removeprefix("file://")


def _encode(buffer: io.BytesIO) -> str:
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _add_tree(archive: zipfile.ZipFile, directory: str, prefix: str) -> None:
    for folder, _, files in os.walk(directory):
        for name in files:
            full = os.path.join(folder, name)
            archive.write(full, os.path.join(prefix, os.path.relpath(full, directory)))


def pack_python_files(paths: str) -> str:
    """The files and directories of ``python.files`` (comma-separated) as one zip, base64
    encoded: a file at the zip's root, a directory under its own name, so each imports as
    it would with its parent directory on ``sys.path``, as in PyFlink's Python workers."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in _entries(paths):
            local = _local(path)
            if os.path.isfile(local):
                archive.write(local, os.path.basename(local))
            elif os.path.isdir(local):
                _add_tree(archive, local, os.path.basename(os.path.abspath(local)))
            else:
                msg = (
                    f"python file {path!r} (env.add_python_file / python.files) does not "
                    "exist; give the path of a file or directory on this machine"
                )
                raise FileNotFoundError(msg)
    return _encode(buffer)


def pack_python_archives(value: str) -> str:
    """``python.archives`` (comma-separated ``path`` or ``path#target_dir``) as one zip,
    base64 encoded, each archive stored whole as ``<target dir>/<its file name>``. As in
    PyFlink, the target directory is the archive's file name when none is given, and the
    archive is extracted there, in the job's working directory on each TaskManager."""
    buffer = io.BytesIO()
    targets: set[str] = set()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for entry in _entries(value):
            path, _, target = entry.partition("#")
            local = _local(path)
            name = os.path.basename(local)
            target = target or name
            if not os.path.isfile(local):
                msg = (
                    f"python archive {path!r} (env.add_python_archive / python.archives) "
                    "does not exist; give the path of an archive file on this machine"
                )
                raise FileNotFoundError(msg)
            if archive_format(name) is None:
                msg = (
                    f"python archive {path!r} is not a zip, jar, whl, egg, tar, tar.gz or "
                    "tgz file (told by its name); pack its content in one of those"
                )
                raise ValueError(msg)
            if target in (".", "..") or "/" in target or os.sep in target:
                msg = (
                    f"target directory {target!r} of python archive {path!r} must be one "
                    "directory name, without '/'"
                )
                raise ValueError(msg)
            if target in targets:
                msg = f"two python archives are extracted to {target!r}; give each its own"
                raise ValueError(msg)
            targets.add(target)
            archive.write(local, f"{target}/{name}")
    return _encode(buffer)


def pack_python_requirements(value: str) -> str:
    """``python.requirements`` (``requirements_file`` or ``requirements_file#cache_dir``)
    as one zip, base64 encoded: the file as ``requirements.txt`` and the cache directory's
    packages under ``cache/``."""
    path, _, cache = value.partition("#")
    local = _local(path)
    if not os.path.isfile(local):
        msg = (
            f"requirements file {path!r} (env.set_python_requirements / python.requirements) "
            "does not exist; give the path of a pip requirements file on this machine"
        )
        raise FileNotFoundError(msg)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        archive.write(local, REQUIREMENTS_FILE)
        if cache:
            cache_dir = _local(cache)
            if not os.path.isdir(cache_dir):
                msg = (
                    f"requirements cache directory {cache!r} (env.set_python_requirements) "
                    "does not exist; give a directory of the packages to install, as "
                    "`pip download -d DIR -r requirements.txt` fills it"
                )
                raise FileNotFoundError(msg)
            _add_tree(archive, cache_dir, "cache")
    return _encode(buffer)
