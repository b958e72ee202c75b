"""Finding and reading the checkpoint a job restores from: the latest retained one that can
be read, or one named by its path (Flink's ``Checkpoints.loadAndValidateCheckpoint``).

It only reads: it holds no lock and changes no state. The CheckpointCoordinator records
what it returns (ids, shared files, statistics) under its own lock.
"""

from __future__ import annotations

import logging

from weir.core.checkpoint import CheckpointMetadata, CheckpointStorage, decode_metadata
from weir.core.errors import (
    CheckpointError,
    CheckpointStorageUnavailableError,
    CorruptCheckpointError,
    NonRecoverableError,
)
from weir.core.highavailability import CompletedCheckpointStore
from weir.core.ids import JobId
from weir.jobmanager.checkpoint.completed_checkpoint import CompletedCheckpoint

logger = logging.getLogger(__name__)


def _unreachable(exc: OSError) -> bool:
    """Whether reading a checkpoint failed because its storage did not answer (a refused
    or dropped connection, a timeout, a server error), not because a file is missing or
    may not be read: a later attempt may succeed."""
    return not isinstance(
        exc,
        FileNotFoundError | IsADirectoryError | NotADirectoryError | PermissionError,
    ) and not isinstance(exc, NonRecoverableError)


class CheckpointRestorer:
    def __init__(
        self, job_id: JobId, storage: CheckpointStorage, store: CompletedCheckpointStore
    ) -> None:
        self._job_id = job_id
        self._storage = storage
        self._store = store

    def latest(self, verify_state: bool) -> CompletedCheckpoint | None:
        """The latest retained checkpoint that can be read; None when the store holds none.
        A missing or corrupt file makes it fall back to the previous retained checkpoint
        (logged at WARNING); CheckpointError when none is usable. A storage that does not
        answer raises CheckpointStorageUnavailableError at once: restoring an older
        checkpoint then would repeat what sinks committed after it. LeaderLostError when
        the HA store cannot say now which checkpoints it holds."""
        self._store.settle()
        pointers = self._store.get_all()
        if not pointers:
            return None
        problems: list[str] = []
        for pointer in reversed(pointers):
            try:
                metadata = self.load(pointer.external_pointer, verify_state)
                if metadata.checkpoint_id != pointer.checkpoint_id:
                    msg = (
                        f"{pointer.external_pointer} holds checkpoint {metadata.checkpoint_id}, "
                        f"not {pointer.checkpoint_id}"
                    )
                    raise CorruptCheckpointError(msg, path=pointer.external_pointer)
            except (CorruptCheckpointError, OSError) as exc:
                if isinstance(exc, OSError) and _unreachable(exc):
                    msg = (
                        f"job {self._job_id}: cannot read checkpoint {pointer.checkpoint_id} "
                        f"at {pointer.external_pointer}: {exc}"
                    )
                    raise CheckpointStorageUnavailableError(msg) from exc
                problems.append(f"checkpoint {pointer.checkpoint_id}: {exc}")
                logger.warning(
                    "job %s: checkpoint %d cannot be restored (%s); trying an older one",
                    self._job_id,
                    pointer.checkpoint_id,
                    exc,
                )
                continue
            return CompletedCheckpoint(metadata, pointer.external_pointer)
        msg = (
            f"job {self._job_id}: none of its {len(pointers)} retained checkpoints can be "
            f"restored: {'; '.join(problems)}. Raise execution.checkpointing.num-retained to "
            "keep more, or resubmit the job from a savepoint (weir run -s PATH)"
        )
        raise CheckpointError(msg)

    def load(self, pointer: str, verify_state: bool) -> CheckpointMetadata:
        """Read the checkpoint or savepoint whose ``_metadata`` is at ``pointer`` (or in
        the directory ``pointer``). ``verify_state`` reads every state file and checks its
        checksum; otherwise only that each exists (inline state is always decoded)."""
        metadata = decode_metadata(self._storage.read_metadata(pointer), source=pointer)
        for handle in metadata.stream_handles():
            if verify_state or handle.inline is not None:
                self._storage.read_state(handle)
            else:
                self._storage.check_exists(handle)
        return metadata
