"""What the REST API needs of the Dispatcher's savepoints: ``SavepointTrigger``.

Until the Dispatcher takes savepoints, a cluster's trigger is
``UnsupportedSavepointTrigger``: every request is answered with an error that says so
(501) and leaves the job as it was, never with a savepoint that was not taken. The
composition root hands the endpoint a real trigger once the Dispatcher has one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from weir.rest.errors import RestHandlerError

__all__ = ["SavepointOperation", "SavepointTrigger", "UnsupportedSavepointTrigger"]


@dataclass(frozen=True, slots=True)
class SavepointOperation:
    """Where a triggered savepoint is: IN_PROGRESS, or COMPLETED with its location or
    its failure."""

    status: str
    location: str = ""
    failure: str = ""


class SavepointTrigger(Protocol):
    """What the REST handlers need of the Dispatcher's savepoints."""

    def trigger(
        self, job_id: str, target_directory: str | None, *, cancel_job: bool, drain: bool
    ) -> str:
        """Start a savepoint (then cancel or stop the job when asked); returns its
        trigger id at once."""
        ...

    def status(self, job_id: str, trigger_id: str) -> SavepointOperation: ...


class UnsupportedSavepointTrigger:
    """The trigger of a cluster whose Dispatcher takes no savepoints yet."""

    def trigger(
        self, job_id: str, target_directory: str | None, *, cancel_job: bool, drain: bool
    ) -> str:
        msg = (
            f"savepoints are not supported by this cluster yet, so job {job_id} was left "
            "running untouched; cancel it with PATCH /jobs/{jobid} and resume later from a "
            "retained checkpoint (execution.checkpointing.externalized-checkpoint-retention: "
            "RETAIN_ON_CANCELLATION, then weir run -s <chk-dir>)"
        )
        raise RestHandlerError(msg, 501)

    def status(self, job_id: str, trigger_id: str) -> SavepointOperation:
        msg = f"no savepoint operation {trigger_id} for job {job_id}: this cluster takes none"
        raise RestHandlerError(msg, 404)
