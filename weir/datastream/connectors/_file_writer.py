"""The part-file lifecycle behind ``FileSink``: in-progress → pending → finished.

One ``FileWriter`` per sink subtask. File names follow Flink's FileSink:

* finished (visible): ``{bucket}/{prefix}-{uid}-{counter}{suffix}``, ``uid`` a random
  UUID of the writer, ``counter`` per bucket from 0;
* in-progress and pending (hidden): ``{bucket}/.{finished name}.inprogress.{uuid}``, as
  Flink's local RecoverableWriter names its temporary files. A pending file is a closed
  in-progress file waiting for its checkpoint to complete; committing renames it.

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
"""

from __future__ import annotations

import json
import logging
import re
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
        # Files opened since the latest snapshot: no checkpoint holds them.
        self._unsnapshotted: set[str] = set()

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
        self._unsnapshotted.add(temp)
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
        self._unsnapshotted.clear()
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
                "root": self._root,
                "pending": {str(c): files for c, files in self._pending_per_checkpoint.items()},
                "in_progress": in_progress,
            }
        ).encode()

    def commit_up_to(self, checkpoint_id: int) -> None:
        for pending_id in sorted(self._pending_per_checkpoint):
            if pending_id > checkpoint_id:
                break
            for temp, final in self._pending_per_checkpoint.pop(pending_id):
                self._commit(temp, final)

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
                for temp, final in entry["pending"][checkpoint_id]:
                    self._commit(temp, final)
            # Writers before this one kept a restored in-progress file until a later
            # checkpoint completed, listing it here.
            self._delete(entry.get("cleanup", ()))
            for part in entry["in_progress"]:
                self._commit_in_progress(part)
        if not restored:
            return
        self._uid = restored[0]["uid"]
        uids = {entry["uid"] for entry in restored}
        roots = {self._root} | {entry.get("root", self._root) for entry in restored}
        for root in sorted(roots):
            self._discard_after_checkpoint(root, uids)

    def _commit_in_progress(self, part: dict[str, Any]) -> None:
        """The first ``size`` bytes of a restored in-progress file become its finished
        file; once they are, the in-progress file goes."""
        fs = self._fs
        temp, final, size = part["temp"], part["final"], part["size"]
        if fs.exists(final):
            committed = fs.size(final)
            if committed != size:
                msg = (
                    f"FileSink: {final!r} was committed with {committed} bytes by a restore "
                    f"of another checkpoint, while this checkpoint holds the first {size} "
                    f"bytes of its in-progress file {temp!r}; restoring this checkpoint "
                    "would repeat or lose output. Restore the latest checkpoint of the job "
                    "instead"
                )
                raise CheckpointError(msg)
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
        if not fs.exists(root):
            return
        either = "|".join(re.escape(uid) for uid in sorted(uids))
        name = re.compile(
            rf"(?P<hidden>\.)?{re.escape(self._prefix)}-(?P<uid>{either})-(?P<counter>\d+)"
            rf"{re.escape(self._suffix)}(?P<temp>\.inprogress\..*)?"
        )
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
        unsnapshotted, self._unsnapshotted = sorted(self._unsnapshotted), set()
        for temp in unsnapshotted:
            try:
                if self._fs.exists(temp):
                    logger.info("FileSink: discarding %s, which no checkpoint holds", temp)
                    self._fs.rm(temp)
            except OSError:
                # The task's end does not hang on this cleanup: the file stays hidden, and
                # the next restore of this writer's uid deletes it.
                logger.warning("FileSink: could not delete %s", temp, exc_info=True)
