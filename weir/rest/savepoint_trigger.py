"""What the REST API needs of the Dispatcher's savepoints: ``SavepointTrigger``.

``DispatcherSavepointTrigger`` is the cluster's: Flink's asynchronous operations over the
Dispatcher's blocking ``TriggerSavepoint`` call. Each request runs on a thread of its own
and is remembered under its trigger id until it has been read as COMPLETED (and for a
while after). ``UnsupportedSavepointTrigger`` answers every request with an error that
says so (501) and leaves the job as it was; a view built without a Dispatcher uses it.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Protocol

from weir.client.dispatcher_client import DispatcherGateway
from weir.core.errors import WeirError
from weir.rest.errors import RestHandlerError

__all__ = [
    "DispatcherSavepointTrigger",
    "SavepointOperation",
    "SavepointTrigger",
    "UnsupportedSavepointTrigger",
]

logger = logging.getLogger(__name__)

# Completed operations are kept this long (Flink's rest.async.store-duration, 5 min).
_COMPLETED_KEPT_S = 300.0


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
        self,
        job_id: str,
        target_directory: str | None,
        *,
        cancel_job: bool = False,
        stop: bool = False,
        drain: bool = False,
    ) -> str:
        """Start a savepoint (then cancel the job, or stop it with the savepoint, when
        asked); returns its trigger id at once."""
        ...

    def status(self, job_id: str, trigger_id: str) -> SavepointOperation: ...


@dataclass(slots=True)
class _Operation:
    job_id: str
    result: SavepointOperation
    completed_at: float = 0.0


class DispatcherSavepointTrigger:
    """Savepoints through the Dispatcher's gRPC service. A job that does not exist is
    refused at once (404); every other failure (the job is not RUNNING, no savepoint
    directory, the savepoint failed) is the operation's failure cause, as in Flink."""

    def __init__(self, dispatcher: DispatcherGateway) -> None:
        self._dispatcher = dispatcher
        self._lock = threading.Lock()
        self._operations: dict[str, _Operation] = {}

    def trigger(
        self,
        job_id: str,
        target_directory: str | None,
        *,
        cancel_job: bool = False,
        stop: bool = False,
        drain: bool = False,
    ) -> str:
        self._dispatcher.job_details(job_id)  # JobNotFoundError (404) for an unknown job
        trigger_id = uuid.uuid4().hex
        with self._lock:
            self._forget_old()
            self._operations[trigger_id] = _Operation(job_id, SavepointOperation("IN_PROGRESS"))
        threading.Thread(
            target=self._run,
            args=(trigger_id, job_id, target_directory),
            kwargs={"cancel_job": cancel_job, "stop": stop, "drain": drain},
            name=f"savepoint-{trigger_id[:8]}",
            daemon=True,
        ).start()
        return trigger_id

    def _run(
        self,
        trigger_id: str,
        job_id: str,
        target_directory: str | None,
        *,
        cancel_job: bool,
        stop: bool,
        drain: bool,
    ) -> None:
        try:
            location = self._dispatcher.trigger_savepoint(
                job_id, target_directory, stop=stop, drain=drain
            )
            if cancel_job:
                self._dispatcher.cancel_job(job_id)
            result = SavepointOperation("COMPLETED", location=location)
        except WeirError as exc:
            logger.info("savepoint %s of job %s failed: %s", trigger_id, job_id, exc)
            result = SavepointOperation("COMPLETED", failure=str(exc))
        except Exception as exc:  # an unexpected error still completes the operation
            logger.exception("savepoint %s of job %s failed", trigger_id, job_id)
            result = SavepointOperation("COMPLETED", failure=f"{type(exc).__name__}: {exc}")
        with self._lock:
            self._operations[trigger_id] = _Operation(job_id, result, time.monotonic())

    def status(self, job_id: str, trigger_id: str) -> SavepointOperation:
        with self._lock:
            operation = self._operations.get(trigger_id)
        if operation is None or operation.job_id != job_id:
            msg = (
                f"no savepoint operation {trigger_id} for job {job_id}: it was never "
                f"triggered, or it completed more than {_COMPLETED_KEPT_S:.0f} s ago"
            )
            raise RestHandlerError(msg, 404)
        return operation.result

    def _forget_old(self) -> None:
        now = time.monotonic()
        for trigger_id, op in list(self._operations.items()):
            if op.completed_at and now - op.completed_at > _COMPLETED_KEPT_S:
                del self._operations[trigger_id]


class UnsupportedSavepointTrigger:
    """The trigger of a view that has no Dispatcher to take savepoints."""

    def trigger(
        self,
        job_id: str,
        target_directory: str | None,
        *,
        cancel_job: bool = False,
        stop: bool = False,
        drain: bool = False,
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
