"""``JobClient``: what ``env.execute_async()`` returns (PyFlink's JobClient).

Its methods answer with ``CompletableFuture``\\ s, as PyFlink's do::

    client = env.execute_async("my job")
    print(client.get_job_status().result())          # JobStatus.RUNNING
    result = client.get_job_execution_result().result()  # waits for the end
"""

from __future__ import annotations

from weir.common.completable_future import CompletableFuture
from weir.common.job_status import JobStatus
from weir.core import executor
from weir.core.errors import WeirError
from weir.core.executor import JobID

__all__ = ["JobClient"]


class JobClient:
    """A handle on one submitted job."""

    def __init__(self, client: executor.JobClient) -> None:
        self._client = client

    def get_job_id(self) -> JobID:
        return JobID(self._client.get_job_id())

    def get_job_status(self) -> CompletableFuture:
        """The job's ``JobStatus`` now."""
        return CompletableFuture.completed(JobStatus[self._client.get_job_status()])

    def cancel(self) -> CompletableFuture:
        """Cancel the job; the future completes (with None) once the cluster took the
        request. The job is CANCELED shortly after."""
        self._client.cancel()
        return CompletableFuture.completed(None)

    def stop_with_savepoint(
        self, advance_to_end_of_event_time: bool, savepoint_directory: str | None = None
    ) -> CompletableFuture:
        raise _no_savepoints()

    def trigger_savepoint(self, savepoint_directory: str | None = None) -> CompletableFuture:
        raise _no_savepoints()

    def get_accumulators(self) -> CompletableFuture:
        """The job's accumulators: none, as Weir has no accumulators yet."""
        return CompletableFuture.completed({})

    def get_job_execution_result(self) -> CompletableFuture:
        """The ``JobExecutionResult`` once the job ends; ``result()`` raises
        ``JobExecutionError`` if it failed or was cancelled."""
        return CompletableFuture(self._client.get_job_execution_result, self._ended)

    def _ended(self) -> bool:
        return JobStatus[self._client.get_job_status()].is_globally_terminal_state()

    def __repr__(self) -> str:
        return f"JobClient({self._client.get_job_id()})"


def _no_savepoints() -> WeirError:
    return WeirError(
        "savepoints are not available yet; to stop a job and resume it later, retain its "
        "checkpoints (execution.checkpointing.externalized-checkpoint-retention: "
        "RETAIN_ON_CANCELLATION), cancel it and run it again with weir run -s <chk-N dir>"
    )
