"""Where ``env.execute()`` sends a JobGraph: Flink's PipelineExecutor idea.

``weir run`` registers a remote executor; with none registered, the environment starts
the embedded MiniCluster (imported lazily, so building a job never imports services).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

from weir.core.job_graph import JobGraph


class JobClient(Protocol):
    """A handle on a submitted job (Flink's JobClient)."""

    def get_job_id(self) -> str: ...
    def get_job_status(self) -> str: ...
    def cancel(self) -> None: ...
    def get_job_execution_result(self) -> JobExecutionResult: ...
    def collect(self, operator_id: str) -> CloseableIterator: ...


class CloseableIterator(Protocol):
    def __iter__(self) -> Iterator[Any]: ...
    def __next__(self) -> Any: ...
    def close(self) -> None: ...


class JobExecutionResult:
    """What ``execute()`` returns (PyFlink's JobExecutionResult)."""

    def __init__(
        self, job_id: str, net_runtime_ms: int, accumulators: dict[str, Any] | None = None
    ):
        self._job_id = job_id
        self._net_runtime_ms = net_runtime_ms
        self._accumulators = accumulators or {}

    def get_job_id(self) -> str:
        return self._job_id

    def get_net_runtime(self) -> int:
        return self._net_runtime_ms

    def get_all_accumulator_results(self) -> dict[str, Any]:
        return dict(self._accumulators)

    def is_job_execution_result(self) -> bool:
        return True

    def get_job_execution_result(self) -> JobExecutionResult:
        return self

    def __repr__(self) -> str:
        return f"JobExecutionResult(job_id={self._job_id}, net_runtime={self._net_runtime_ms} ms)"


class PipelineExecutor(Protocol):
    def submit(self, job_graph: JobGraph) -> JobClient:
        """Submit and return at once; the job runs on."""
        ...


_registered: PipelineExecutor | None = None


def register_executor(executor: PipelineExecutor | None) -> None:
    global _registered
    _registered = executor


def is_executor_registered() -> bool:
    return _registered is not None


def get_executor() -> PipelineExecutor:
    """The registered executor, or the embedded MiniCluster's."""
    if _registered is not None:
        return _registered
    # Imported lazily: building a job must not import the services.
    from weir.client.mini_cluster import shared_mini_cluster_executor  # noqa: PLC0415

    return shared_mini_cluster_executor()


# Configuration the entry point (``weir run``) sets for the program it runs, merged
# under the program's own settings by ``StreamExecutionEnvironment``: Flink's
# ContextEnvironment idea (e.g. ``-p 4`` becomes ``parallelism.default: 4``).
_context_configuration: dict[str, str] = {}


def set_context_configuration(entries: dict[str, str]) -> None:
    global _context_configuration
    _context_configuration = dict(entries)


def get_context_configuration() -> dict[str, str]:
    return dict(_context_configuration)
