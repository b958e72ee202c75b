"""How a ``FileSink`` part file is kept on its file system until it is committed (Flink's
``RecoverableWriter``): the one place that knows whether the file system renames.

``PartFiles`` is the contract ``FileWriter`` writes against; the task thread calls every
method. Two implementations:

* ``RenamePartFiles`` (local, ``memory://``, HDFS): a part file is written as a hidden file
  beside its final name, ``.{name}.inprogress.{uuid}``; a checkpoint flushes it and records
  its length; committing renames it; a restore turns the checkpointed length into the
  finished file.
* ``MultipartPartFiles`` (S3, ``_s3_part_files``): a part file is a multipart upload of its
  final object, invisible until completed.

A part's *resumable* state (what ``persist`` returns, in every checkpoint while the part is
in progress) and its *committable* (what ``close_for_commit`` returns once the part is
rolled) are plain JSON values that live in the sink's checkpointed state.
"""

from __future__ import annotations

import logging
import uuid
from typing import IO, Any, Protocol

from fsspec import AbstractFileSystem

from weir.core.errors import CheckpointError

logger = logging.getLogger(__name__)


class OpenPart(Protocol):
    """A part file being written."""

    def write(self, data: bytes) -> None: ...

    def persist(self, checkpoint_id: int) -> dict[str, Any]:
        """Make what was written so far survive a failure; its resumable state."""

    def close_for_commit(self) -> Any:
        """No more writes: what ``PartFiles.commit`` takes to make the file visible."""

    def close(self) -> None:
        """Let go of the file without committing it (the task ends or failed)."""

    def discard(self) -> None:
        """Drop the file: no checkpoint holds it, so no restore can need it. After
        ``close`` or ``close_for_commit`` too."""


class PartFiles(Protocol):
    """Part files on one file system; see the module docstring."""

    def open(self, directory: str, name: str) -> OpenPart:
        """A new part file that becomes ``{directory}/{name}`` when committed."""

    def commit(self, committable: Any) -> None:
        """Make a closed part file visible; idempotent, after a restore too. Raises
        CheckpointError when the file can be neither committed nor found committed."""

    def commit_in_progress(self, resumable: dict[str, Any]) -> None:
        """On restore: make the checkpointed part of an in-progress file its finished file
        (unless an earlier restore did), and drop what kept it in progress."""

    def checkpoint_complete(self, checkpoint_id: int) -> None:
        """Checkpoint ``checkpoint_id`` completed: what only earlier ones needed can go."""

    def abort_uploads(self, root: str, matches: Any) -> None:
        """On restore: drop the unfinished uploads under ``root`` whose file names
        ``matches`` (a compiled pattern): written after the restored checkpoint."""

    def close(self) -> None:
        """The writer ends."""


# -- file systems that rename -----------------------------------------------------------


class RenamePart:
    """A hidden file beside the final name; flushed at each checkpoint."""

    def __init__(self, fs: AbstractFileSystem, temp: str, final: str) -> None:
        self.temp = temp
        self.final = final
        self.size = 0
        self._fs = fs
        self._handle: IO[bytes] | None = fs.open(temp, "wb")

    def write(self, data: bytes) -> None:
        assert self._handle is not None
        self._handle.write(data)
        self.size += len(data)

    def persist(self, checkpoint_id: int) -> dict[str, Any]:
        assert self._handle is not None
        self._handle.flush()
        return {"temp": self.temp, "final": self.final, "size": self.size}

    def close_for_commit(self) -> list[str]:
        self.close()
        return [self.temp, self.final]

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    def discard(self) -> None:
        self.close()
        if self._fs.exists(self.temp):
            logger.info("FileSink: discarding %s, which no checkpoint holds", self.temp)
            self._fs.rm(self.temp)


class RenamePartFiles:
    """``PartFiles`` of a file system with atomic rename and flush (module docstring)."""

    def __init__(self, fs: AbstractFileSystem) -> None:
        self._fs = fs

    def open(self, directory: str, name: str) -> RenamePart:
        self._fs.makedirs(directory, exist_ok=True)
        temp = f"{directory}/.{name}.inprogress.{uuid.uuid4()}"
        return RenamePart(self._fs, temp, f"{directory}/{name}")

    def commit(self, committable: Any) -> None:
        temp, final = committable
        fs = self._fs
        if fs.exists(temp):
            fs.mv(temp, final)
        elif not fs.exists(final):
            msg = (
                f"FileSink: cannot commit {final!r}: its pending file {temp!r} is gone "
                "and it was not committed before; the output lost data"
            )
            raise CheckpointError(msg)

    def commit_in_progress(self, resumable: dict[str, Any]) -> None:
        """The first ``size`` bytes of a restored in-progress file become its finished
        file; once they are, the in-progress file goes."""
        fs = self._fs
        temp, final, size = resumable["temp"], resumable["final"], resumable["size"]
        if fs.exists(final):
            _check_committed_size(final, fs.size(final), size, temp)
            logger.info("FileSink: %s was committed by an earlier restore", final)
        elif not fs.exists(temp):
            msg = (
                f"FileSink: the in-progress file {temp!r} of the restored checkpoint is "
                f"gone and {final!r} was never committed; its data cannot be recovered"
            )
            raise CheckpointError(msg)
        elif fs.size(temp) == size:
            fs.mv(temp, final)
            return
        elif size:  # the file holds bytes written after the checkpoint too
            data = fs.cat_file(temp, start=0, end=size)
            if len(data) != size:
                msg = (
                    f"FileSink: the in-progress file {temp!r} holds {len(data)} bytes, the "
                    f"checkpoint recorded {size}"
                )
                raise CheckpointError(msg)
            directory, _, name = final.rpartition("/")
            staging = f"{directory}/.{name}.inprogress.{uuid.uuid4()}"
            with fs.open(staging, "wb") as out:
                out.write(data)
            fs.mv(staging, final)
        if fs.exists(temp):
            fs.rm(temp)

    def checkpoint_complete(self, checkpoint_id: int) -> None:
        """Nothing kept for earlier checkpoints: an in-progress file grows in place."""

    def abort_uploads(self, root: str, matches: Any) -> None:
        """Nothing: hidden files are all there is, and the writer deletes those."""

    def close(self) -> None:
        """Nothing held beyond the parts."""


def _check_committed_size(final: str, committed: int, size: int, where: str) -> None:
    if committed != size:
        msg = (
            f"FileSink: {final!r} was committed with {committed} bytes by a restore of "
            f"another checkpoint, while this checkpoint holds the first {size} bytes of "
            f"its in-progress file ({where}); restoring this checkpoint would repeat or "
            "lose output. Restore the latest checkpoint of the job instead"
        )
        raise CheckpointError(msg)
