"""The savepoints in progress: where each goes, whether the job stops after it, and the
future its caller waits on, until ``_metadata`` is written or the savepoint fails.

Not thread-safe: the CheckpointCoordinator calls it under its lock. The effects it returns
(completing or failing a caller's future, removing a failed savepoint's directory) run
after the lock is released, as the coordinator's other effects do.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass

from weir.core.checkpoint import CheckpointMetadata
from weir.core.checkpoint.savepoint_storage import (
    remove_savepoint_directory,
    write_savepoint_metadata,
)
from weir.core.errors import CheckpointError
from weir.core.ids import JobId


@dataclass(frozen=True, slots=True)
class SavepointRequest:
    """A savepoint in progress: where it goes, whether the job stops after it, and the
    future its caller waits on (the savepoint's directory, or the reason it failed)."""

    directory: str
    terminate: bool
    drain: bool
    result: Future[str]


class SavepointRequests:
    """The requests of the savepoints in progress, by checkpoint id."""

    def __init__(self, job_id: JobId) -> None:
        self._job_id = job_id
        self._requests: dict[int, SavepointRequest] = {}

    def __contains__(self, checkpoint_id: int) -> bool:
        return checkpoint_id in self._requests

    def add(self, checkpoint_id: int, request: SavepointRequest) -> None:
        self._requests[checkpoint_id] = request

    def get(self, checkpoint_id: int) -> SavepointRequest | None:
        return self._requests.get(checkpoint_id)

    def pop(self, checkpoint_id: int) -> SavepointRequest | None:
        """Forget the savepoint (it is aborted); None when it is a checkpoint."""
        return self._requests.pop(checkpoint_id, None)

    def write_metadata(self, checkpoint_id: int, metadata: CheckpointMetadata) -> str:
        """Write savepoint ``checkpoint_id``'s ``_metadata`` into its directory and forget
        it; returns where it is. When writing fails (OSError, WeirError) it stays, for the
        abort that follows to fail its caller."""
        pointer = write_savepoint_metadata(self._requests[checkpoint_id].directory, metadata)
        del self._requests[checkpoint_id]
        return pointer

    @staticmethod
    def completed_effect(request: SavepointRequest, pointer: str) -> Callable[[], None]:
        """Tell the caller where its savepoint is."""
        return lambda: request.result.set_result(pointer)

    def failed_effect(
        self, checkpoint_id: int, request: SavepointRequest, reason: str
    ) -> Callable[[], None]:
        """Remove what the savepoint wrote and tell the caller why it failed."""

        def effect() -> None:
            remove_savepoint_directory(request.directory)
            error = CheckpointError(
                f"job {self._job_id}: savepoint {checkpoint_id} failed: {reason}"
            )
            request.result.set_exception(error)

        return effect
