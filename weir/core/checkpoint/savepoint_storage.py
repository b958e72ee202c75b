"""Where savepoints live: one self-contained directory each, never deleted by a job.

Layout (Flink's)::

    {state.savepoints.dir}/savepoint-{job-id[:6]}-{random}/_metadata   written last
                                                          /<state files>

Every task writes its state files straight into the directory (the trigger carries it
to them), keyed state always in the canonical form (``KeyGroupsStateHandle``) that every
backend restores; the JobMaster writes ``_metadata`` last, naming the files relative to
the directory. So a savepoint refers to nothing outside its directory (no ``shared/``):
it can be moved, copied or archived and restored from wherever it is. A savepoint is
not part of its job's retained checkpoints, so no retention deletes it; ``weir savepoint
-d PATH`` does (``dispose_savepoint``).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping

import fsspec

from weir.core import config as cfg
from weir.core.checkpoint.metadata import (
    CheckpointMetadata,
    CheckpointType,
    decode_metadata,
    encode_metadata,
    metadata_directory,
)
from weir.core.checkpoint.storage import METADATA_FILE_NAME, FileSystemLocation, read_metadata_at
from weir.core.errors import CheckpointError, ConfigurationError
from weir.core.object_stores import write_whole

__all__ = [
    "SAVEPOINT_DIR_PREFIX",
    "dispose_savepoint",
    "new_savepoint_directory",
    "read_savepoint_metadata",
    "remove_savepoint_directory",
    "savepoint_location",
    "savepoint_parent_directory",
    "write_savepoint_metadata",
]

logger = logging.getLogger(__name__)

SAVEPOINT_DIR_PREFIX = "savepoint-"


def savepoint_parent_directory(config: Mapping[str, str], given: str | None) -> str:
    """The directory a new savepoint goes under: the one given (``weir savepoint JOB
    DIR``), else ``execution.checkpointing.savepoint-dir`` (``state.savepoints.dir``).
    ConfigurationError when there is none."""
    directory = given or cfg.get_with_deprecated_keys(config, cfg.SAVEPOINT_DIR)
    if not directory:
        msg = (
            "no savepoint directory: give one (weir savepoint JOB_ID DIR, weir stop "
            "--savepointPath DIR JOB_ID) or set execution.checkpointing.savepoint-dir "
            "(state.savepoints.dir) in the configuration"
        )
        raise ConfigurationError(msg)
    nul = directory.find("\x00")
    if nul >= 0:
        msg = (
            f"the savepoint directory {directory!r} holds a NUL character (at position "
            f"{nul}), which no path can hold; give the directory without it"
        )
        raise ConfigurationError(msg)
    return directory


def new_savepoint_directory(parent: str, job_id: str) -> str:
    """The URL of a new savepoint's directory under ``parent`` (not created yet).
    ConfigurationError when no filesystem of this process serves ``parent``."""
    try:
        fs, root = fsspec.core.url_to_fs(parent)
    except (ValueError, ImportError, OSError) as exc:
        # fsspec's own words: "Protocol not known: foo", "Install s3fs to access S3", ...
        msg = (
            f"cannot use the savepoint directory {parent!r}: {exc}; give a directory URL of "
            "a filesystem the cluster can write (file://, hdfs://, s3:// with s3fs "
            "installed, ...)"
        )
        raise ConfigurationError(msg) from exc
    name = f"{SAVEPOINT_DIR_PREFIX}{job_id[:6]}-{uuid.uuid4().hex[:12]}"
    return str(fs.unstrip_protocol(f"{root.rstrip('/')}/{name}"))


def savepoint_location(
    directory: str, checkpoint_id: int, *, create: bool = True
) -> FileSystemLocation:
    """Where the tasks write their parts of savepoint ``checkpoint_id``: created by the
    coordinator when it triggers the savepoint, only resolved by a task (``create=False``).
    Every part is a file of the directory, however small: a savepoint is self-contained."""
    fs, path = fsspec.core.url_to_fs(directory)
    path = path.rstrip("/")
    if create:
        fs.makedirs(path, exist_ok=True)
    return FileSystemLocation(fs, path, checkpoint_id)


def write_savepoint_metadata(directory: str, metadata: CheckpointMetadata) -> str:
    """Write the savepoint's ``_metadata`` into ``directory``, all-or-nothing, with its
    files named relative to it. Returns the directory's URL (what ``weir run -s`` takes)."""
    fs, path = fsspec.core.url_to_fs(directory)
    path = path.rstrip("/")
    url = str(fs.unstrip_protocol(path))
    fs.makedirs(path, exist_ok=True)
    write_whole(fs, f"{path}/{METADATA_FILE_NAME}", encode_metadata(metadata, relative_to=url))
    return url


def remove_savepoint_directory(directory: str) -> None:
    """Delete what a failed savepoint wrote; no error when it is gone."""
    fs, path = fsspec.core.url_to_fs(directory)
    try:
        fs.rm(path.rstrip("/"), recursive=True)
    except FileNotFoundError:
        pass  # nothing was written
    except OSError:
        # A leftover directory costs space only: it has no _metadata, so nothing restores it.
        logger.warning("could not delete the failed savepoint at %s", directory, exc_info=True)


def read_savepoint_metadata(path: str) -> CheckpointMetadata:
    """The ``_metadata`` of the savepoint (or retained checkpoint) at ``path``, its
    directory or its ``_metadata`` file. CheckpointError (CorruptCheckpointError) saying
    what is wrong when the path does not exist, has no ``_metadata``, or cannot be read."""
    fs, local = fsspec.core.url_to_fs(metadata_directory(path))
    if not fs.exists(local):
        msg = f"there is no savepoint at {path}: the path does not exist"
        raise CheckpointError(msg)
    if fs.isdir(local) and not fs.exists(f"{local.rstrip('/')}/{METADATA_FILE_NAME}"):
        msg = (
            f"{path} is not a savepoint: it has no {METADATA_FILE_NAME} file (a savepoint "
            "that did not complete, or a directory above the savepoint-... one)"
        )
        raise CheckpointError(msg)
    return decode_metadata(read_metadata_at(path), source=path)


def dispose_savepoint(path: str) -> str:
    """Delete the savepoint at ``path`` (``weir savepoint -d``) and return its directory.
    Refuses, saying why, a path that is no savepoint (a retained checkpoint is its job's
    to delete: other checkpoints may share its files)."""
    metadata = read_savepoint_metadata(path)
    if metadata.checkpoint_type is not CheckpointType.SAVEPOINT:
        msg = (
            f"{path} is checkpoint {metadata.checkpoint_id} of job {metadata.job_id}, not a "
            "savepoint; retained checkpoints are deleted by their job's retention "
            "(execution.checkpointing.externalized-checkpoint-retention), not disposed"
        )
        raise CheckpointError(msg)
    directory = metadata_directory(path)
    fs, local = fsspec.core.url_to_fs(directory)
    fs.rm(local.rstrip("/"), recursive=True)
    logger.info("disposed savepoint %s", directory)
    return directory
