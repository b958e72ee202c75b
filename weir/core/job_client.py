"""``JobClient``: a handle on one submitted job (Flink's ``core.execution.JobClient``).

It is what ``env.execute_async()`` returns and what a ``PipelineExecutor`` hands back
from ``submit``; ``weir.common.job_client.JobClient`` (PyFlink's name) is this class.
Its methods answer with ``CompletableFuture``\\ s, as PyFlink's do::

    client = env.execute_async("my job")
    print(client.get_job_status().result())          # JobStatus.RUNNING
    result = client.get_job_execution_result().result()  # waits for the end

An executor subclasses it for its cluster: it implements ``get_job_id``,
``get_job_status``, ``cancel``, ``get_job_execution_result`` and ``collect``;
savepoints and accumulators answer as Weir supports them today. Methods may be called
from any thread; a future's ``result()`` may block until the cluster answers.
"""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING

from weir.core.completable_future import CompletableFuture
from weir.core.errors import WeirError

if TYPE_CHECKING:
    # Annotations only: weir.core.executor imports this module for PipelineExecutor.
    from weir.core.executor import CloseableIterator, JobID

__all__ = ["JobClient"]


class JobClient(abc.ABC):
    """A handle on one submitted job."""

    @abc.abstractmethod
    def get_job_id(self) -> JobID:
        """The id the cluster gave the job."""

    @abc.abstractmethod
    def get_job_status(self) -> CompletableFuture:
        """The job's ``JobStatus`` now."""

    @abc.abstractmethod
    def cancel(self) -> CompletableFuture:
        """Cancel the job; the future completes (with None) once the cluster took the
        request. The job is CANCELED shortly after."""

    @abc.abstractmethod
    def get_job_execution_result(self) -> CompletableFuture:
        """The ``JobExecutionResult`` once the job ends; ``result()`` raises
        ``JobExecutionError`` if it failed or was cancelled."""

    @abc.abstractmethod
    def collect(self, operator_id: str) -> CloseableIterator:
        """The records of the job's collect sink ``operator_id``, as they come (what
        ``DataStream.execute_and_collect()`` iterates; not part of PyFlink's JobClient)."""

    def stop_with_savepoint(
        self, advance_to_end_of_event_time: bool, savepoint_directory: str | None = None
    ) -> CompletableFuture:
        raise _no_savepoints()

    def trigger_savepoint(self, savepoint_directory: str | None = None) -> CompletableFuture:
        raise _no_savepoints()

    def get_accumulators(self) -> CompletableFuture:
        """The job's accumulators: none, as Weir has no accumulators yet."""
        return CompletableFuture.completed({})

    def __repr__(self) -> str:
        return f"JobClient({self.get_job_id()})"


def _no_savepoints() -> WeirError:
    return WeirError(
        "this job client reaches no cluster, so it cannot take savepoints; submit the job "
        "to a cluster (weir run, or the embedded MiniCluster) and use its JobClient, or "
        "weir savepoint JOB_ID DIR"
    )
