"""What the TaskManager gives each of its tasks: the network, and where a task reports
its states, its checkpoints, its output to collect and its metrics (Flink hands its
Task the same as constructor arguments: the shuffle environment, TaskManagerActions,
the CheckpointResponder, the TaskMetricGroup)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any, Protocol

from weir.core.deployment import ExecutionState
from weir.core.ids import ExecutionAttemptId
from weir.core.metrics import ScopedMetricGroup
from weir.core.throwable_classifier import ThrowableType
from weir.taskmanager.checkpointing.subtask_checkpoint import Acknowledge, Decline
from weir.taskmanager.network.api import NetworkEnvironment
from weir.taskmanager.state.backend import KeyedStateBackend

RegisterKvState = Callable[
    [str, str, KeyedStateBackend, Callable[[], Any], Callable[[Callable[[], None]], None]], None
]


class ReportState(Protocol):
    def __call__(
        self,
        attempt_id: ExecutionAttemptId,
        state: ExecutionState,
        cause: str | None,
        throwable_type: ThrowableType,
        /,
    ) -> None: ...


@dataclass(frozen=True)
class TaskServices:
    network: NetworkEnvironment
    report_state: ReportState
    """Called from the task thread on every transition; the string is the formatted
    failure (with the user's original traceback), the type whether a restart can cure it
    (``weir.core.throwable_classifier``; RECOVERABLE_ERROR but for a failure)."""
    collect: Callable[[str, int, bytes, bool, int], None]
    """``(operator_id, subtask_index, serialized batch, end_of_data, checkpoint epoch)``;
    may block."""
    print_target: str | None = None
    """Path ``print()`` appends to (line-buffered); ``None`` = ``sys.stdout``."""
    acknowledge_checkpoint: Acknowledge = lambda *_: None
    """Called from the task's checkpoint writer thread once its state is written."""
    decline_checkpoint: Decline = lambda *_: None
    """Called when the task cannot take a checkpoint."""
    end_of_data: Callable[[ExecutionAttemptId], None] = lambda _: None
    """Called from the task thread when the task reached the end of its input and waits
    for its final checkpoint; must not block."""
    task_thread: Callable[[], AbstractContextManager[object]] = nullcontext
    """Entered on the task thread around its whole run: what the TaskManager sets up for
    the user code of this task's job there (its working directory, exit monitoring)."""
    metric_group: ScopedMetricGroup | None = None
    """The task's metric group (scope taskmanager.job.task); None: metrics go nowhere."""
    register_kv_state: RegisterKvState | None = None
    """``(operator_id, name, backend, read, put_mail)`` from the task thread when an
    operator creates a queryable state (in ``open``); may block on one RPC. None: the
    TaskManager serves no queryable state."""
