"""The part-file lifecycle behind ``FileSink``: in-progress → pending → finished.

One ``FileWriter`` per sink subtask. How a part file is kept until it is committed depends
on the file system (``_part_files``): hidden files renamed on commit where the file system
renames, multipart uploads on S3 (``_s3_part_files``). File names follow Flink's FileSink:

* finished (visible): ``{bucket}/{prefix}-{uid}-{counter}{suffix}``, ``uid`` a random
  UUID of the writer, ``counter`` per bucket from 0;
* in-progress and pending (hidden): ``{bucket}/.{finished name}.inprogress.{uuid}``, as
  Flink's local RecoverableWriter names its temporary files (on S3 the upload of the
  finished name itself, and such a hidden object for the bytes a checkpoint put aside).
  A pending file is a closed in-progress file waiting for its checkpoint to complete;
  committing renames it (completes the upload).

An in-progress file survives checkpoints (only rolling closes it); the checkpoint records
its length.

**Restoring a checkpoint** commits everything the checkpoint holds, idempotently, so the
same checkpoint can be restored any number of times: its pending files are renamed unless
their finished file is already there, and the checkpointed part of each in-progress file
becomes a finished file of its own (under the finished name it was written for, where
it was written), unless a finished file of exactly that length is already there. The bytes written
after the checkpoint never show, and the in-progress file is deleted once committed.

**Closing without finishing** (the task failed, was cancelled, or its JobMaster lost its
leadership) commits nothing and deletes the hidden files that no snapshot of this writer
holds: those opened since its latest snapshot. No restore can need them, and the writer
is the only one that knows them once a restore of its uid has already run: a deposed
leader's tasks may outlive its successor's restore for a moment, and what they wrote
meanwhile would stay hidden for good. Files a snapshot holds stay for the restore.

A restored writer continues the restored writer's ``uid`` (the first one's, when it
restores several states after a rescale), with its counters past every finished file of
that uid, so everything written under the uid after the checkpoint is recognisable: a
restore deletes the hidden files of each uid it restores. So a run that was restored,
rolled files for checkpoints that never completed (a full checkpoint directory) and then
failed leaves nothing behind once the checkpoint is restored again. Two jobs must not
restore one checkpoint into one base path at the same time: each deletes the other's
hidden files.

A writer that starts fresh takes the uid its sink gives its subtask (``start_fresh``):
the same in every attempt of one job, and another in each job. So a restarted attempt
that has no checkpoint to restore deletes what earlier attempts of its subtask left
hidden (and aborts their uploads) before it writes.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fsspec.core import url_to_fs

from weir.core.errors import CheckpointError
from weir.core.object_stores import is_object_store
from weir.datastream.connectors._part_files import OpenPart, PartFiles, RenamePartFiles

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
    handle: OpenPart | None = field(default=None, repr=False)

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
        self._parts = _part_files_of(self._fs)
        self._prefix = part_prefix
        self._suffix = part_suffix
        self._rolling_policy = rolling_policy
        self._clock = clock
        self._uid = str(uuid.uuid4())
        self._counters: dict[str, int] = {}
        self._in_progress: dict[str, InProgressFile] = {}
        # committables of closed files not yet handed to a checkpoint, then per checkpoint
        self._pending: list[Any] = []
        self._pending_per_checkpoint: dict[int, list[Any]] = {}
        # Part files opened since the latest snapshot: no checkpoint holds them.
        self._unsnapshotted: list[OpenPart] = []

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
        handle = self._parts.open(directory, name)
        self._unsnapshotted.append(handle)
        temp = getattr(handle, "temp", f"{directory}/{name}")
        part = InProgressFile(bucket_id, temp, f"{directory}/{name}", now, now, handle=handle)
        self._in_progress[bucket_id] = part
        return part

    def _close_part(self, part: InProgressFile) -> None:
        """Roll: the in-progress file becomes pending."""
        assert part.handle is not None
        committable = part.handle.close_for_commit()
        part.handle = None
        del self._in_progress[part.bucket_id]
        self._pending.append(committable)

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
        self._unsnapshotted.clear()
        in_progress = [
            {
                **part.handle.persist(checkpoint_id),
                "bucket": part.bucket_id,
                "size": part.size,
                "created": part.creation_time,
            }
            for part in self._in_progress.values()
            if part.handle is not None
        ]
        return json.dumps(
            {
                "version": _STATE_VERSION,
                "uid": self._uid,
                "root": self._root,
                "pending": {str(c): files for c, files in self._pending_per_checkpoint.items()},
                "in_progress": in_progress,
            }
        ).encode()

    def commit_up_to(self, checkpoint_id: int) -> None:
        for pending_id in sorted(self._pending_per_checkpoint):
            if pending_id > checkpoint_id:
                break
            for committable in self._pending_per_checkpoint.pop(pending_id):
                self._parts.commit(committable)
        self._parts.checkpoint_complete(checkpoint_id)

    # -- start ------------------------------------------------------------------------------
    def start_fresh(self, uid: str, discard_leftovers: bool) -> None:
        """Write under ``uid``, which earlier attempts of this subtask in this job used too
        (see the module docstring); with ``discard_leftovers`` (a restarted attempt),
        delete what they left hidden and abort their uploads first. Before any record."""
        self._uid = uid
        if discard_leftovers:
            self._discard_after_checkpoint(self._root, {uid})

    # -- restore ----------------------------------------------------------------------------
    def restore(self, states: list[bytes]) -> None:
        """Commit what the restored states hold (see the module docstring), delete the
        hidden files their writers wrote after the checkpoint, and continue the first
        state's uid. Called once, before any record, with every writer state this
        subtask restores (several after a rescale to fewer subtasks)."""
        restored = [json.loads(state) for state in states]
        for entry in restored:
            if entry.get("version") != _STATE_VERSION:
                msg = f"FileSink: unknown state version {entry.get('version')!r}"
                raise CheckpointError(msg)
        for entry in restored:
            for checkpoint_id in sorted(entry["pending"], key=int):
                for committable in entry["pending"][checkpoint_id]:
                    self._parts.commit(committable)
            # Writers before this one kept a restored in-progress file until a later
            # checkpoint completed, listing it here.
            self._delete(entry.get("cleanup", ()))
            for part in entry["in_progress"]:
                self._parts.commit_in_progress(part)
        if not restored:
            return
        self._uid = restored[0]["uid"]
        uids = {entry["uid"] for entry in restored}
        roots = {self._root} | {entry.get("root", self._root) for entry in restored}
        for root in sorted(roots):
            self._discard_after_checkpoint(root, uids)

    def _delete(self, paths: Any) -> None:
        for path in paths:
            if self._fs.exists(path):
                self._fs.rm(path)

    def _discard_after_checkpoint(self, root: str, uids: set[str]) -> None:
        """Delete the hidden files under ``root`` of the writers of ``uids`` (the restored
        ones and the restored runs that continued them): the restored checkpoint's are
        committed by now, so all that are left were written after it. This writer's
        counters move past the finished files of its uid under its base path."""
        fs = self._fs
        either = "|".join(re.escape(uid) for uid in sorted(uids))
        name = re.compile(
            rf"(?P<hidden>\.)?{re.escape(self._prefix)}-(?P<uid>{either})-(?P<counter>\d+)"
            rf"{re.escape(self._suffix)}(?P<temp>\.inprogress\..*)?"
        )
        # Unfinished uploads first: on S3 they are not objects, and a prefix that holds
        # only those does not "exist".
        self._parts.abort_uploads(root, name)
        if not fs.exists(root):
            return
        own_root = self._root.rstrip("/")
        for path in fs.find(root):
            directory, _, file_name = path.rpartition("/")
            match = name.fullmatch(file_name)
            if match is None:
                continue
            if match["hidden"] and match["temp"]:
                logger.info("FileSink: discarding %s, written after the restored checkpoint", path)
                fs.rm(path)
            elif not match["hidden"] and not match["temp"] and match["uid"] == self._uid:
                if directory == own_root or directory.startswith(own_root + "/"):
                    bucket = directory[len(own_root) :].strip("/")
                    counter = int(match["counter"]) + 1
                    self._counters[bucket] = max(self._counters.get(bucket, 0), counter)

    # -- end ------------------------------------------------------------------------------
    def finish(self) -> None:
        """End of input: close every part file. They are pending until a checkpoint
        covers them and completes; nothing is committed here."""
        for part in list(self._in_progress.values()):
            self._close_part(part)

    def close(self) -> None:
        """Close open files without committing: those a snapshot holds stay hidden, for
        recovery; the others are deleted (the module docstring says why)."""
        for part in list(self._in_progress.values()):
            if part.handle is not None:
                part.handle.close()
                part.handle = None
        self._in_progress.clear()
        unsnapshotted, self._unsnapshotted = self._unsnapshotted, []
        for handle in unsnapshotted:
            try:
                handle.discard()
            except OSError:
                # The task's end does not hang on this cleanup: the file stays hidden (the
                # upload unfinished), and the next restore of this writer's uid drops it.
                logger.warning("FileSink: could not discard a part file", exc_info=True)
        self._parts.close()


def _part_files_of(fs: Any) -> PartFiles:
    """Multipart uploads where the file system has them (S3), renames elsewhere."""
    if is_object_store(fs) and hasattr(fs, "create_multipart_upload"):
        from weir.datastream.connectors._s3_part_files import (  # noqa: PLC0415 (S3 only)
            MultipartPartFiles,
        )

        return MultipartPartFiles(fs)
    return RenamePartFiles(fs)
