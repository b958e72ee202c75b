"""Where ``env.execute()`` sends a JobGraph: Flink's PipelineExecutor idea.

``weir run`` registers a remote executor; with none registered, the environment starts
the embedded MiniCluster, found through an entry point (so building a job never imports
services).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from importlib.metadata import entry_points
from typing import Any, Protocol

from weir.core.errors import WeirError
from weir.core.job_client import JobClient
from weir.core.job_graph import JobGraph


class CloseableIterator(Protocol):
    """The records of a collect sink (``JobClient.collect``); closing it early cancels
    the job, as Flink's CloseableIterator does."""

    def __iter__(self) -> Iterator[Any]: ...
    def __next__(self) -> Any: ...
    def close(self) -> None: ...


class JobID:
    """A job's id (PyFlink's JobID): ``str(job_id)`` is its 32 hex digits. Equal to another
    JobID or to the plain string of the same id."""

    __slots__ = ("_hex",)

    def __init__(self, hex_id: str) -> None:
        self._hex = str(hex_id)

    def __str__(self) -> str:
        return self._hex

    def __repr__(self) -> str:
        return f"JobID({self._hex})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, JobID):
            return self._hex == other._hex
        if isinstance(other, str):
            return self._hex == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._hex)


class JobExecutionResult:
    """What ``execute()`` returns (PyFlink's JobExecutionResult)."""

    def __init__(
        self, job_id: str, net_runtime_ms: int, accumulators: dict[str, Any] | None = None
    ):
        self._job_id = job_id
        self._net_runtime_ms = net_runtime_ms
        self._accumulators = accumulators or {}

    def get_job_id(self) -> JobID:
        return JobID(self._job_id)

    def get_net_runtime(self) -> int:
        """How long the job ran, in milliseconds."""
        return self._net_runtime_ms

    def get_accumulator_result(self, accumulator_name: str) -> Any:
        """The accumulator's final value, or None if the job has none of that name."""
        return self._accumulators.get(accumulator_name)

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


# Where the embedded executor comes from when none is registered: a packaging entry point,
# as Flink finds its PipelineExecutorFactories through a ServiceLoader. weir.core thus
# names no module of the client layer, and building a job imports no service.
EXECUTOR_ENTRY_POINTS = "weir.pipeline_executors"
EMBEDDED_EXECUTOR = "embedded"


def get_executor() -> PipelineExecutor:
    """The registered executor, or the embedded MiniCluster's."""
    if _registered is not None:
        return _registered
    found = entry_points(group=EXECUTOR_ENTRY_POINTS, name=EMBEDDED_EXECUTOR)
    if not found:
        msg = (
            f"no executor is registered and no {EMBEDDED_EXECUTOR!r} entry point of group "
            f"{EXECUTOR_ENTRY_POINTS!r} is installed; install Weir (pip install weir, or "
            "make setup in a checkout) rather than importing it from a source folder"
        )
        raise WeirError(msg)
    factory: Callable[[], PipelineExecutor] = next(iter(found)).load()
    return factory()


# Configuration the entry point (``weir run``) sets for the program it runs, merged
# under the program's own settings by ``StreamExecutionEnvironment``: Flink's
# ContextEnvironment idea (e.g. ``-p 4`` becomes ``parallelism.default: 4``).
_context_configuration: dict[str, str] = {}


def set_context_configuration(entries: dict[str, str]) -> None:
    global _context_configuration
    _context_configuration = dict(entries)


def get_context_configuration() -> dict[str, str]:
    return dict(_context_configuration)
