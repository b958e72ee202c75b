"""Checkpoint storage: where tasks write snapshot bytes and the JobMaster writes ``_metadata``.

Layout of :class:`FileSystemCheckpointStorage` (any fsspec URL)::

    {checkpoints_dir}/{job-id}/chk-{n}/_metadata      written last, atomically
                              /chk-{n}/<state files> exclusive to checkpoint n
                              /shared/               files several checkpoints refer to
                              /taskowned/            files owned by the TaskManagers

State smaller than ``execution.checkpointing.data-inline-threshold`` (20 KB, as Flink's)
gets no file: it stays inline in its handle and so in ``_metadata``, as Flink's
``ByteStreamStateHandle``.

:class:`JobManagerCheckpointStorage` keeps each snapshot inline in its handle, so state
travels with the acknowledgement to the JobMaster and lives in its memory (the seeds'
MemoryStateBackend); meant for local runs with small state.

Both are built the same way in the JobMaster and in every TaskExecutor from the job's
configuration (:func:`create_checkpoint_storage`). The sides differ, as Flink's
``CheckpointStorageAccess`` does: the CheckpointCoordinator creates the job's directories
once (``initialize_base_locations``) and each checkpoint's directory when it triggers it
(``init_checkpoint``); a task only resolves the location (``resolve_checkpoint``), with no
call to the file system, and writes into it. On a remote file system each call is a round
trip (WebHDFS: one HTTP request, two for a file, the second to a DataNode), so a checkpoint
makes as few as it can: for small state, one directory, the ``_metadata`` file and its
rename, and the deletion of the checkpoint it subsumes. Methods do blocking I/O: call them
off the RPC threads.
"""

from __future__ import annotations

import abc
import errno
import logging
import re
import threading
import uuid
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import fsspec
import lz4.frame
from fsspec import AbstractFileSystem

from weir.core import config as cfg
from weir.core.checkpoint.metadata import decode_metadata
from weir.core.checkpoint.state_handles import StreamStateHandle
from weir.core.errors import (
    CheckpointError,
    ConfigurationError,
    CorruptCheckpointError,
    NonRecoverableError,
)
from weir.core.ids import JobId
from weir.core.object_stores import is_object_store

logger = logging.getLogger(__name__)

METADATA_FILE_NAME = "_metadata"
SHARED_DIR = "shared"
TASK_OWNED_DIR = "taskowned"
CHECKPOINT_DIR_PREFIX = "chk-"
JOBMANAGER_POINTER_SCHEME = "jobmanager://"

# Flink's MemoryStateBackend/JobManagerCheckpointStorage default: every snapshot travels
# inside an RPC and sits in the JobMaster's memory until it is subsumed, so it must stay
# small next to the gRPC message limit and the JobMaster's heap.
DEFAULT_MAX_INLINE_STATE_SIZE = 5 * 1024 * 1024

# Shared files (SST files, up to tens of MB) are copied in pieces of this size.
_COPY_CHUNK = 4 << 20
# A checkpoint directory a task still writes into while it is discarded is removed
# again: a task writes a handful of files, so a few tries see it empty.
_REMOVE_ATTEMPTS = 4

_STATE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def checksum(data: bytes) -> int:
    return zlib.crc32(data)


def _validate_state_name(name: str) -> None:
    if not _STATE_NAME.match(name) or name == METADATA_FILE_NAME:
        msg = (
            f"bad state file name {name!r}: use letters, digits, '.', '_' and '-', not "
            "starting with '.' or '_' (those are reserved for metadata and temporary files)"
        )
        raise CheckpointError(msg)


def _encode(data: bytes | Sequence[bytes], compress: bool) -> bytes:
    data = _joined(data)
    return lz4.frame.compress(data) if compress else data


def _joined(data: bytes | Sequence[bytes]) -> bytes:
    return data if isinstance(data, bytes) else b"".join(data)


def _stored_parts(data: bytes | Sequence[bytes], compress: bool) -> list[bytes]:
    """What is stored of ``data`` (bytes, or their parts in order), as parts: as given
    when not compressed, so that they are written one after the other, never joined."""
    if compress or isinstance(data, bytes):
        return [_encode(data, compress)]
    return list(data)


def _checksum_of_parts(parts: Sequence[bytes]) -> int:
    """``checksum`` of the parts joined (each read once, while it is in the cache)."""
    crc = 0
    for part in parts:
        crc = zlib.crc32(part, crc)
    return crc


def _inline_handle(stored: bytes, compress: bool) -> StreamStateHandle:
    return StreamStateHandle(
        path=None, size=len(stored), checksum=checksum(stored), compressed=compress, inline=stored
    )


def _decode(stored: bytes, handle: StreamStateHandle) -> bytes:
    if len(stored) != handle.size or checksum(stored) != handle.checksum:
        msg = (
            f"checkpoint state {handle.description} is corrupt: expected {handle.size} bytes "
            f"with crc32 {handle.checksum:#010x}, got {len(stored)} bytes with crc32 "
            f"{checksum(stored):#010x}"
        )
        raise CorruptCheckpointError(msg, path=handle.description)
    if not handle.compressed:
        return stored
    try:
        return bytes(lz4.frame.decompress(stored))
    except RuntimeError as exc:  # lz4 reports a bad frame as RuntimeError
        msg = f"checkpoint state {handle.description} cannot be decompressed: {exc}"
        raise CorruptCheckpointError(msg, path=handle.description) from exc


def _read_file(url: str) -> bytes:
    fs, path = fsspec.core.url_to_fs(url)
    try:
        data: bytes = fs.cat_file(path)
    except FileNotFoundError as exc:
        msg = f"checkpoint file {url} is missing"
        raise CorruptCheckpointError(msg, path=url) from exc
    return data


def _put(fs: AbstractFileSystem, path: str, data: bytes | Sequence[bytes]) -> None:
    """Write a state file of ``data`` (bytes, or their parts in order): on an object store
    in one PUT (all or nothing, and nothing left when the writer dies midway), elsewhere
    as a file, part after part."""
    if is_object_store(fs):
        fs.pipe_file(path, _joined(data))
        return
    with fs.open(path, "wb") as f:
        for part in [data] if isinstance(data, bytes) else data:
            f.write(part)


def read_state(handle: StreamStateHandle) -> bytes:
    """The bytes of ``handle``, decompressed, after checking size and checksum.

    Raises CorruptCheckpointError naming the file when it is missing or does not match.
    """
    stored = handle.inline if handle.inline is not None else _read_file(str(handle.path))
    return _decode(stored, handle)


class CheckpointStorageLocation(abc.ABC):
    """Where the state of one checkpoint goes (Flink's CheckpointStorageLocation)."""

    def __init__(self, checkpoint_id: int) -> None:
        self.checkpoint_id = checkpoint_id

    @abc.abstractmethod
    def write_state(
        self, name: str, data: bytes | Sequence[bytes], compress: bool = False
    ) -> StreamStateHandle:
        """Store ``data`` (bytes, or their parts in order: what a large state is made of
        need not be joined to be written) as state ``name`` of this checkpoint;
        lz4-compressed when ``compress``; the handle carries the checksum of the stored
        bytes. ``name`` must be unique within the checkpoint (e.g.
        ``{operator}-{subtask}-keyed``)."""


class CheckpointStorage(abc.ABC):
    """Storage of one job's checkpoints."""

    def __init__(self, job_id: JobId) -> None:
        self.job_id = job_id

    def initialize_base_locations(self) -> None:  # noqa: B027 - nothing to create
        """Create what every checkpoint of the job shares; the CheckpointCoordinator calls it
        once, before its first checkpoint (Flink's ``initializeBaseLocationsForCheckpoint``)."""

    @abc.abstractmethod
    def init_checkpoint(self, checkpoint_id: int) -> CheckpointStorageLocation:
        """The location of checkpoint ``checkpoint_id``, created if needed (idempotent); the
        CheckpointCoordinator's call, when it triggers the checkpoint."""

    def resolve_checkpoint(self, checkpoint_id: int) -> CheckpointStorageLocation:
        """A task's view of the location the coordinator created for ``checkpoint_id``:
        nothing is created (Flink's ``resolveCheckpointStorageLocation``)."""
        return self.init_checkpoint(checkpoint_id)

    def read_state(self, handle: StreamStateHandle) -> bytes:
        return read_state(handle)

    supports_shared_state = False
    """Files can be put in ``shared/`` and referred to by several checkpoints."""

    def write_shared_file(self, name: str, local_path: str) -> StreamStateHandle:
        """Upload the local file ``local_path`` as ``shared/{name}`` (incremental state,
        reference-counted by the CheckpointCoordinator)."""
        msg = (
            f"{type(self).__name__} keeps no shared files; incremental checkpoints need "
            "execution.checkpointing.storage: filesystem"
        )
        raise CheckpointError(msg)

    def discard_shared(self, paths: list[str]) -> None:  # noqa: B027 - nothing to delete
        """Delete files of ``shared/`` no retained checkpoint refers to any more."""

    def check_writable(self) -> None:  # noqa: B027 - nothing to check
        """Raise, saying where and why, when checkpoints cannot be written (the JobMaster
        asks when the job starts: credentials or permissions that no restart changes)."""

    def check_exists(self, handle: StreamStateHandle) -> None:
        """Raise CorruptCheckpointError when the file of ``handle`` is gone or resized
        (cheaper than ``read_state``, which also checks every byte)."""
        if handle.inline is not None:
            return
        fs, path = fsspec.core.url_to_fs(str(handle.path))
        try:
            size = fs.info(path).get("size")  # one call: there, and how large
        except FileNotFoundError:
            size = None
        if size != handle.size:
            msg = f"checkpoint file {handle.path} is missing or not {handle.size} bytes"
            raise CorruptCheckpointError(msg, path=str(handle.path))

    @abc.abstractmethod
    def write_metadata(self, checkpoint_id: int, metadata: bytes) -> str:
        """Store the ``_metadata`` of a completed checkpoint, atomically: a reader sees the
        whole file or none. Returns the external pointer to pass to ``read_metadata``."""

    @abc.abstractmethod
    def read_metadata(self, pointer: str) -> bytes:
        """The ``_metadata`` bytes at ``pointer`` (a ``chk-N`` directory or its ``_metadata``
        file). Raises CorruptCheckpointError when it is missing."""

    @abc.abstractmethod
    def discard_checkpoint(self, checkpoint_id: int) -> None:
        """Delete checkpoint ``checkpoint_id`` and its exclusive state; no error if gone."""

    def checkpoint_exists(self, checkpoint_id: int) -> bool:
        """Whether checkpoint ``checkpoint_id``'s location is still there (a task whose
        write failed asks: gone means the coordinator aborted and deleted it)."""
        return True

    @abc.abstractmethod
    def discard_job(self, retain: bool) -> None:
        """The job ended. ``retain=False`` deletes all its checkpoint data;
        ``retain=True`` keeps completed checkpoints and drops only unfinished ones."""


# -- file systems -----------------------------------------------------------------------


class FileSystemLocation(CheckpointStorageLocation):
    """A directory; state smaller than ``inline_threshold`` bytes (as stored) stays inline
    in its handle instead."""

    def __init__(
        self,
        fs: AbstractFileSystem,
        directory: str,
        checkpoint_id: int,
        inline_threshold: int = 0,
    ) -> None:
        super().__init__(checkpoint_id)
        self._fs = fs
        self.directory = directory
        self.inline_threshold = inline_threshold

    @property
    def url(self) -> str:
        return str(self._fs.unstrip_protocol(self.directory))

    def write_state(
        self, name: str, data: bytes | Sequence[bytes], compress: bool = False
    ) -> StreamStateHandle:
        _validate_state_name(name)
        parts = _stored_parts(data, compress)
        size = sum(len(part) for part in parts)
        if size < self.inline_threshold:
            return _inline_handle(_joined(parts), compress)
        path = f"{self.directory}/{name}"
        _put(self._fs, path, parts)
        return StreamStateHandle(
            path=str(self._fs.unstrip_protocol(path)),
            size=size,
            checksum=_checksum_of_parts(parts),
            compressed=compress,
        )


class FileSystemCheckpointStorage(CheckpointStorage):
    """Checkpoints under ``{checkpoints_dir}/{job_id}/`` on any fsspec file system; state
    smaller than ``data_inline_threshold`` bytes inline in ``_metadata`` (0: every piece of
    state in a file)."""

    def __init__(
        self, checkpoints_dir: str, job_id: JobId, *, data_inline_threshold: int = 0
    ) -> None:
        super().__init__(job_id)
        if not checkpoints_dir:
            msg = (
                "filesystem checkpoint storage needs a directory: set "
                "execution.checkpointing.dir (e.g. file:///var/weir/checkpoints)"
            )
            raise ConfigurationError(msg)
        fs, root = fsspec.core.url_to_fs(checkpoints_dir)
        self._fs: AbstractFileSystem = fs
        self.job_dir = f"{root.rstrip('/')}/{job_id}"
        self.shared_dir = f"{self.job_dir}/{SHARED_DIR}"
        self.task_owned_dir = f"{self.job_dir}/{TASK_OWNED_DIR}"
        self.data_inline_threshold = data_inline_threshold

    def initialize_base_locations(self) -> None:
        self._fs.makedirs(self.shared_dir, exist_ok=True)
        self._fs.makedirs(self.task_owned_dir, exist_ok=True)

    @property
    def job_url(self) -> str:
        return str(self._fs.unstrip_protocol(self.job_dir))

    supports_shared_state = True

    def write_shared_file(self, name: str, local_path: str) -> StreamStateHandle:
        _validate_state_name(name)
        path = f"{self.shared_dir}/{name}"
        if is_object_store(self._fs):
            # One PUT (an SST file is tens of MB): unlike a multipart upload, a PUT cut
            # short by a killed task leaves nothing behind.
            with open(local_path, "rb") as source:
                data = source.read()
            _put(self._fs, path, data)
            return StreamStateHandle(
                path=str(self._fs.unstrip_protocol(path)),
                size=len(data),
                checksum=zlib.crc32(data),
                compressed=False,
            )
        crc, size = 0, 0
        with open(local_path, "rb") as source, self._create(path, self.shared_dir) as target:
            while chunk := source.read(_COPY_CHUNK):
                crc = zlib.crc32(chunk, crc)
                size += len(chunk)
                target.write(chunk)
        return StreamStateHandle(
            path=str(self._fs.unstrip_protocol(path)), size=size, checksum=crc, compressed=False
        )

    def discard_shared(self, paths: list[str]) -> None:
        for url in paths:
            fs, path = fsspec.core.url_to_fs(url)
            try:
                fs.rm(path)
            except FileNotFoundError:
                pass  # already gone: discarding is idempotent
            except OSError:
                # A leftover file costs space, never correctness: no later checkpoint
                # refers to it (its name carries the uploading database's id).
                logger.warning("could not delete shared checkpoint file %s", url, exc_info=True)

    def checkpoint_dir(self, checkpoint_id: int) -> str:
        return f"{self.job_dir}/{CHECKPOINT_DIR_PREFIX}{checkpoint_id}"

    def check_writable(self) -> None:
        """Write and delete an empty file in the job's directory. On an object store this
        is the first request that needs write permission (there are no directories to
        create), and the errors of S3 name the bucket and key already."""
        probe = f"{self.job_dir}/.write-check-{uuid.uuid4().hex}"
        try:
            # The job's directory first: on an object store, a HEAD of the bucket that names
            # it when the credentials are refused or the bucket is missing.
            self._fs.makedirs(self.job_dir, exist_ok=True)
            self._fs.pipe_file(probe, b"")
            self._fs.rm(probe)
        except NonRecoverableError:
            raise  # already names the bucket, the key and what to do (S3's errors)
        except OSError as exc:
            msg = f"cannot write checkpoints to {self.job_url}: {exc}"
            raise CheckpointError(msg) from exc

    def init_checkpoint(self, checkpoint_id: int) -> FileSystemLocation:
        location = self.resolve_checkpoint(checkpoint_id)
        self._fs.makedirs(location.directory, exist_ok=True)
        return location

    def resolve_checkpoint(self, checkpoint_id: int) -> FileSystemLocation:
        return FileSystemLocation(
            self._fs,
            self.checkpoint_dir(checkpoint_id),
            checkpoint_id,
            inline_threshold=self.data_inline_threshold,
        )

    def write_metadata(self, checkpoint_id: int, metadata: bytes) -> str:
        directory = self.checkpoint_dir(checkpoint_id)
        final = f"{directory}/{METADATA_FILE_NAME}"
        # Write beside the target, then rename: a reader (a restarting JobMaster, `weir run
        # -s`, a job ending that keeps its completed checkpoints) sees the whole file or
        # none. HDFS shows a file while it is written, so writing _metadata in place would
        # show a part of it; the rename is one request to the NameNode. Object stores have
        # no rename (`mv` is copy-then-delete), but there one PUT is all-or-nothing.
        if is_object_store(self._fs):
            _put(self._fs, final, metadata)
            return str(self._fs.unstrip_protocol(final))
        temp = f"{directory}/.{METADATA_FILE_NAME}.inprogress-{uuid.uuid4().hex}"
        try:
            with self._create(temp, directory) as f:
                f.write(metadata)
            self._fs.mv(temp, final)
        except BaseException:
            self._remove_quietly(temp)
            raise
        return str(self._fs.unstrip_protocol(final))

    def _create(self, path: str, directory: str) -> Any:
        """``path`` opened for writing. Its directory is made by the coordinator
        (``initialize_base_locations``, ``init_checkpoint``) and HDFS makes it on CREATE
        anyway; a local file system where it is missing gets it on the first failure."""
        try:
            return self._fs.open(path, "wb")
        except FileNotFoundError:
            self._fs.makedirs(directory, exist_ok=True)
            return self._fs.open(path, "wb")

    def read_metadata(self, pointer: str) -> bytes:
        return read_metadata_at(pointer)

    def discard_checkpoint(self, checkpoint_id: int) -> None:
        self._remove_quietly(self.checkpoint_dir(checkpoint_id), recursive=True)

    def checkpoint_exists(self, checkpoint_id: int) -> bool:
        return bool(self._fs.exists(self.checkpoint_dir(checkpoint_id)))

    def discard_job(self, retain: bool) -> None:
        if not retain:
            self._remove_quietly(self.job_dir, recursive=True)
            return
        for directory in self._checkpoint_dirs():
            if not self._fs.exists(f"{directory}/{METADATA_FILE_NAME}"):
                self._remove_quietly(directory, recursive=True)
        self._discard_unreferenced_shared()

    def _discard_unreferenced_shared(self) -> None:
        """Delete the files of ``shared/`` no retained checkpoint refers to: those a task
        uploaded for a checkpoint it never acknowledged (it was killed, or its job ended,
        in between), which no reference count ever knew of. Only once the job has ended,
        when no task uploads any more."""
        shared_url = str(self._fs.unstrip_protocol(self.shared_dir))
        referenced: set[str] = set()
        for directory in self._checkpoint_dirs():
            metadata_path = f"{directory}/{METADATA_FILE_NAME}"
            metadata_url = str(self._fs.unstrip_protocol(metadata_path))
            try:
                metadata = decode_metadata(self._fs.cat_file(metadata_path), source=metadata_url)
            except FileNotFoundError:
                # A subsumed checkpoint whose deletion runs now: what it refers to alone is
                # being deleted with it, the rest is referred to by a later one.
                continue
            except (CorruptCheckpointError, OSError) as exc:
                # Unsure what it refers to: keep every shared file.
                logger.warning("keeping every shared file: cannot read %s: %s", metadata_url, exc)
                return
            referenced.update(
                path.rsplit("/", 1)[-1]
                for path in metadata.shared_paths()
                if path.rsplit("/", 1)[0] == shared_url
            )
        try:
            names = [str(p).rsplit("/", 1)[-1] for p in self._fs.ls(self.shared_dir, detail=False)]
        except FileNotFoundError:
            return
        orphans = [f"{shared_url}/{name}" for name in names if name not in referenced]
        if orphans:
            logger.info("deleting %d shared files no retained checkpoint refers to", len(orphans))
            self.discard_shared(orphans)

    def _checkpoint_dirs(self) -> list[str]:
        try:
            entries = self._fs.ls(self.job_dir, detail=False)
        except FileNotFoundError:
            return []
        return [
            str(e).rstrip("/")
            for e in entries
            if str(e).rstrip("/").rsplit("/", 1)[-1].startswith(CHECKPOINT_DIR_PREFIX)
        ]

    def _remove_quietly(self, path: str, recursive: bool = False) -> None:
        for _ in range(_REMOVE_ATTEMPTS - 1):
            try:
                self._fs.rm(path, recursive=recursive)
            except FileNotFoundError:
                return  # already gone: discarding is idempotent
            except OSError as exc:
                if exc.errno != errno.ENOTEMPTY:
                    break
                # A task was still writing its state into the checkpoint being
                # discarded (it ended with its job): what it wrote goes on the next try.
                continue
            return
        try:
            self._fs.rm(path, recursive=recursive)
        except FileNotFoundError:
            pass  # already gone: discarding is idempotent
        except OSError:
            # Leftover files cost space but never correctness: no later checkpoint reuses
            # the id. Say so and go on, as Flink's checkpoint cleaner does.
            logger.warning("could not delete checkpoint data at %s", path, exc_info=True)


# -- the JobMaster's memory ----------------------------------------------------------------


class InlineLocation(CheckpointStorageLocation):
    def __init__(self, checkpoint_id: int, max_state_size: int) -> None:
        super().__init__(checkpoint_id)
        self._max_state_size = max_state_size

    def write_state(
        self, name: str, data: bytes | Sequence[bytes], compress: bool = False
    ) -> StreamStateHandle:
        _validate_state_name(name)
        stored = _encode(data, compress)
        if len(stored) > self._max_state_size:
            msg = (
                f"state {name!r} of checkpoint {self.checkpoint_id} is {len(stored)} bytes, "
                f"over the jobmanager checkpoint storage's limit of {self._max_state_size} "
                "bytes; set execution.checkpointing.storage: filesystem and "
                "execution.checkpointing.dir to a directory every process can reach"
            )
            raise CheckpointError(msg)
        return _inline_handle(stored, compress)


class JobManagerCheckpointStorage(CheckpointStorage):
    """State inline in the handles; ``_metadata`` in the JobMaster's memory, or, when
    ``checkpoints_dir`` is given, in files there (Flink's JobManagerCheckpointStorage)."""

    def __init__(
        self,
        job_id: JobId,
        checkpoints_dir: str | None = None,
        max_state_size: int = DEFAULT_MAX_INLINE_STATE_SIZE,
    ) -> None:
        super().__init__(job_id)
        self.max_state_size = max_state_size
        self._files = (
            FileSystemCheckpointStorage(checkpoints_dir, job_id) if checkpoints_dir else None
        )
        self._lock = threading.Lock()
        self._metadata: dict[int, bytes] = {}

    def initialize_base_locations(self) -> None:
        if self._files is not None:
            self._files.initialize_base_locations()

    def init_checkpoint(self, checkpoint_id: int) -> InlineLocation:
        if self._files is not None:  # where its _metadata goes
            self._files.init_checkpoint(checkpoint_id)
        return self.resolve_checkpoint(checkpoint_id)

    def resolve_checkpoint(self, checkpoint_id: int) -> InlineLocation:
        return InlineLocation(checkpoint_id, self.max_state_size)

    def _pointer(self, checkpoint_id: int) -> str:
        return f"{JOBMANAGER_POINTER_SCHEME}{self.job_id}/{CHECKPOINT_DIR_PREFIX}{checkpoint_id}"

    def write_metadata(self, checkpoint_id: int, metadata: bytes) -> str:
        if self._files is not None:
            return self._files.write_metadata(checkpoint_id, metadata)
        with self._lock:
            self._metadata[checkpoint_id] = bytes(metadata)
        return self._pointer(checkpoint_id)

    def read_metadata(self, pointer: str) -> bytes:
        if not pointer.startswith(JOBMANAGER_POINTER_SCHEME):
            return read_metadata_at(pointer)
        with self._lock:
            for checkpoint_id, data in self._metadata.items():
                if pointer.rstrip("/") == self._pointer(checkpoint_id):
                    return data
        msg = (
            f"checkpoint {pointer} is not in this JobMaster's memory (the jobmanager "
            "checkpoint storage does not outlive the JobMaster)"
        )
        raise CorruptCheckpointError(msg, path=pointer)

    def discard_checkpoint(self, checkpoint_id: int) -> None:
        with self._lock:
            self._metadata.pop(checkpoint_id, None)
        if self._files is not None:
            self._files.discard_checkpoint(checkpoint_id)

    def discard_job(self, retain: bool) -> None:
        if not retain:
            with self._lock:
                self._metadata.clear()
        if self._files is not None:
            self._files.discard_job(retain)


def read_metadata_at(pointer: str) -> bytes:
    """The ``_metadata`` bytes at an fsspec URL of a ``chk-N`` directory or its file
    (what ``weir run -s`` is given). Raises CorruptCheckpointError when it is missing."""
    fs, path = fsspec.core.url_to_fs(pointer)
    path = path.rstrip("/")
    if not path.endswith(f"/{METADATA_FILE_NAME}") and path != METADATA_FILE_NAME:
        path = f"{path}/{METADATA_FILE_NAME}"
    return _read_file(str(fs.unstrip_protocol(path)))


def create_checkpoint_storage(
    config: Mapping[str, str], job_id: JobId, *, metadata_dir: str | None = None
) -> CheckpointStorage:
    """The storage ``execution.checkpointing.storage`` and ``.dir`` ask for.

    ``metadata_dir`` (the JobMaster's, under high availability): where a ``jobmanager``
    storage with no directory of its own writes ``_metadata``, state inline, instead of
    keeping it in memory, so that a new leader restores it."""
    directory = cfg.get_with_deprecated_keys(config, cfg.CHECKPOINTING_DIR)
    kind = cfg.get(config, cfg.CHECKPOINTING_STORAGE) or (
        "filesystem" if directory else "jobmanager"
    )
    if kind == "filesystem":
        threshold = cfg.get_with_deprecated_keys(config, cfg.CHECKPOINTING_DATA_INLINE_THRESHOLD)
        return FileSystemCheckpointStorage(directory, job_id, data_inline_threshold=threshold)
    return JobManagerCheckpointStorage(job_id, directory or metadata_dir or None)
