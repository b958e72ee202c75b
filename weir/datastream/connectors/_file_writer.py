"""The part-file lifecycle behind ``FileSink``: in-progress → pending → finished.

One ``FileWriter`` per sink subtask. File names follow Flink's FileSink:

* finished (visible): ``{bucket}/{prefix}-{uid}-{counter}{suffix}``, ``uid`` a random
  UUID per subtask writer, ``counter`` per bucket from 0;
* in-progress and pending (hidden): ``{bucket}/.{finished name}.inprogress.{uuid}``, as
  Flink's local RecoverableWriter names its temporary files. A pending file is a closed
  in-progress file waiting for its checkpoint to complete; committing renames it.

An in-progress file survives checkpoints (only rolling closes it). The checkpoint records
its length; on recovery the first that many bytes are copied to a new in-progress file,
so the bytes written after the checkpoint never show. The old file stays until a later
checkpoint completes, since recovering from the same checkpoint again still needs it.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, Any

from fsspec.core import url_to_fs

from weir.core.errors import CheckpointError

logger = logging.getLogger(__name__)

_STATE_VERSION = 1


@dataclass(slots=True)
class InProgressFile:
    """The part file a bucket writes to; what a RollingPolicy sees (Flink's PartFileInfo)."""

    bucket_id: str
    temp_path: str
    final_path: str
    creation_time: int
    last_update_time: int
    size: int = 0
    handle: IO[bytes] | None = field(default=None, repr=False)

    def get_bucket_id(self) -> str:
        return self.bucket_id

    def get_creation_time(self) -> int:
        return self.creation_time

    def get_last_update_time(self) -> int:
        return self.last_update_time

    def get_size(self) -> int:
        return self.size


class FileWriter:
    """Writes encoded records into per-bucket part files and moves them through their
    states on the checkpoint hooks. Not thread-safe: the task thread calls everything."""

    def __init__(
        self,
        base_path: str,
        part_prefix: str,
        part_suffix: str,
        rolling_policy: Any,
        clock: Callable[[], int],
    ) -> None:
        self._fs, root = url_to_fs(base_path)
        self._root = root.rstrip("/") or "/"
        self._prefix = part_prefix
        self._suffix = part_suffix
        self._rolling_policy = rolling_policy
        self._clock = clock
        self._uid = str(uuid.uuid4())
        self._counters: dict[str, int] = {}
        self._in_progress: dict[str, InProgressFile] = {}
        # closed files not yet handed to a checkpoint, then per checkpoint id
        self._pending: list[tuple[str, str]] = []
        self._pending_per_checkpoint: dict[int, list[tuple[str, str]]] = {}
        # superseded in-progress files of a restored checkpoint: deleted once a later one
        # completes
        self._cleanup: list[str] = []
        self._cleanup_per_checkpoint: dict[int, list[str]] = {}

    # -- records --------------------------------------------------------------------------
    def write(self, bucket_id: str, element: Any, data: bytes, now: int) -> None:
        part = self._in_progress.get(bucket_id)
        if part is not None and self._rolling_policy.should_roll_on_event(part, element):
            self._close_part(part)
            part = None
        if part is None:
            part = self._open_part(bucket_id, now)
        assert part.handle is not None
        part.handle.write(data)
        part.size += len(data)
        part.last_update_time = now

    def roll_on_processing_time(self, now: int) -> None:
        for part in list(self._in_progress.values()):
            if self._rolling_policy.should_roll_on_processing_time(part, now):
                self._close_part(part)

    def _bucket_dir(self, bucket_id: str) -> str:
        return f"{self._root}/{bucket_id}" if bucket_id else self._root

    def _open_part(self, bucket_id: str, now: int, name: str | None = None) -> InProgressFile:
        directory = self._bucket_dir(bucket_id)
        if name is None:
            counter = self._counters.get(bucket_id, 0)
            self._counters[bucket_id] = counter + 1
            name = f"{self._prefix}-{self._uid}-{counter}{self._suffix}"
        temp = f"{directory}/.{name}.inprogress.{uuid.uuid4()}"
        self._fs.makedirs(directory, exist_ok=True)
        part = InProgressFile(
            bucket_id, temp, f"{directory}/{name}", now, now, handle=self._fs.open(temp, "wb")
        )
        self._in_progress[bucket_id] = part
        return part

    def _close_part(self, part: InProgressFile) -> None:
        """Roll: the in-progress file becomes pending."""
        assert part.handle is not None
        part.handle.close()
        part.handle = None
        del self._in_progress[part.bucket_id]
        self._pending.append((part.temp_path, part.final_path))

    # -- checkpoint hooks -------------------------------------------------------------------
    def snapshot(self, checkpoint_id: int) -> bytes:
        now = self._clock()
        self.roll_on_processing_time(now)
        for part in list(self._in_progress.values()):
            if self._rolling_policy.should_roll_on_checkpoint(part):
                self._close_part(part)
        if any(c >= checkpoint_id for c in self._pending_per_checkpoint):
            msg = (
                f"FileSink: snapshot of checkpoint {checkpoint_id} after checkpoint "
                f"{max(self._pending_per_checkpoint)}; checkpoint ids must increase"
            )
            raise CheckpointError(msg)
        if self._pending:
            self._pending_per_checkpoint[checkpoint_id] = self._pending
            self._pending = []
        if self._cleanup:
            self._cleanup_per_checkpoint[checkpoint_id] = self._cleanup
            self._cleanup = []
        in_progress = []
        for part in self._in_progress.values():
            assert part.handle is not None
            part.handle.flush()
            in_progress.append(
                {
                    "bucket": part.bucket_id,
                    "temp": part.temp_path,
                    "final": part.final_path,
                    "size": part.size,
                    "created": part.creation_time,
                }
            )
        return json.dumps(
            {
                "version": _STATE_VERSION,
                "uid": self._uid,
                "pending": {str(c): files for c, files in self._pending_per_checkpoint.items()},
                "in_progress": in_progress,
                "cleanup": [p for paths in self._cleanup_per_checkpoint.values() for p in paths],
            }
        ).encode()

    def commit_up_to(self, checkpoint_id: int) -> None:
        for pending_id in sorted(self._pending_per_checkpoint):
            if pending_id > checkpoint_id:
                break
            for temp, final in self._pending_per_checkpoint.pop(pending_id):
                self._commit(temp, final)
        for cleanup_id in sorted(self._cleanup_per_checkpoint):
            if cleanup_id > checkpoint_id:
                break
            self._delete(self._cleanup_per_checkpoint.pop(cleanup_id))

    def _commit(self, temp: str, final: str) -> None:
        fs = self._fs
        if fs.exists(temp):
            fs.mv(temp, final)
        elif not fs.exists(final):
            msg = (
                f"FileSink: cannot commit {final!r}: its pending file {temp!r} is gone "
                "and it was not committed before; the output lost data"
            )
            raise CheckpointError(msg)

    def _delete(self, paths: list[str]) -> None:
        for path in paths:
            if self._fs.exists(path):
                self._fs.rm(path)

    def restore(self, state: bytes) -> None:
        """Commit the restored checkpoint's pending files, cut its in-progress files back to
        their checkpointed length, and delete the hidden files written after it."""
        restored = json.loads(state)
        if restored.get("version") != _STATE_VERSION:
            msg = f"FileSink: unknown state version {restored.get('version')!r}"
            raise CheckpointError(msg)
        for checkpoint_id in sorted(restored["pending"], key=int):
            for temp, final in restored["pending"][checkpoint_id]:
                self._commit(temp, final)
        self._delete(restored["cleanup"])
        keep = {entry["temp"] for entry in restored["in_progress"]}
        self._discard_orphans(restored["uid"], keep)
        for entry in restored["in_progress"]:
            self._resume(entry)

    def _resume(self, entry: dict[str, Any]) -> None:
        fs = self._fs
        temp, size = entry["temp"], entry["size"]
        try:
            data = fs.cat_file(temp, start=0, end=size) if size else b""
        except FileNotFoundError as exc:
            msg = (
                f"FileSink: the in-progress file {temp!r} of the restored checkpoint is "
                "gone; its data cannot be recovered"
            )
            raise CheckpointError(msg) from exc
        if len(data) != size:
            msg = (
                f"FileSink: the in-progress file {temp!r} holds {len(data)} bytes, the "
                f"checkpoint recorded {size}"
            )
            raise CheckpointError(msg)
        final = entry["final"]
        name = final.rpartition("/")[2]
        open_part = self._in_progress.get(entry["bucket"])
        if open_part is not None:  # resumed from another subtask's state (rescaled down)
            self._close_part(open_part)
        part = self._open_part(entry["bucket"], self._clock(), name=name)
        part.creation_time = entry["created"]
        assert part.handle is not None
        part.handle.write(data)
        part.size = size
        self._cleanup.append(temp)

    def _discard_orphans(self, uid: str, keep: set[str]) -> None:
        """Hidden files the restored writer opened after the checkpoint: never committed."""
        fs = self._fs
        if not fs.exists(self._root):
            return
        marker = f".{self._prefix}-{uid}-"
        for path in fs.find(self._root):
            name = path.rpartition("/")[2]
            if name.startswith(marker) and ".inprogress." in name and path not in keep:
                logger.info("FileSink: discarding %s, written after the restored checkpoint", path)
                fs.rm(path)

    # -- end ------------------------------------------------------------------------------
    def finish(self) -> None:
        """End of input: close every part file. They are pending until a checkpoint
        covers them and completes; nothing is committed here."""
        for part in list(self._in_progress.values()):
            self._close_part(part)

    def close(self) -> None:
        """Close open files without committing: they stay hidden, for recovery."""
        for part in list(self._in_progress.values()):
            if part.handle is not None:
                part.handle.close()
                part.handle = None
        self._in_progress.clear()
