"""The operator contract inside a chain: batches in, batches out, on the task thread.

An operator is opened with its ``Output`` (a callable taking a list) and then exposes
``process`` (input 0) and, for two-input operators, ``process2`` (input 1): each takes
a *list* of records and hands a list on. Operators never mutate the list they are
given (a fan-out hands the same list to several outputs) and never emit an empty
list. Every method is called on the task thread only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from taskmanager.runtime_context import StreamingRuntimeContext
from taskmanager.state.backend import KeyedStateBackend
from weir.core.job_graph import OperatorDescriptor

Output = Callable[[list[Any]], None]


def discard(batch: list[Any]) -> None:
    """The output of an operator nothing consumes."""


@dataclass(frozen=True, slots=True)
class OperatorSetup:
    """What an operator needs from its task to be built and opened."""

    descriptor: OperatorDescriptor
    payload: Mapping[str, Any]
    runtime_context: StreamingRuntimeContext
    keyed_state_backend: KeyedStateBackend | None
    subtask_index: int
    parallelism: int
    segment_size: int
    collect: Callable[[str, int, bytes, bool, int], None]
    """``(operator_id, subtask_index, serialized batch, end_of_data, checkpoint epoch)``."""
    print_target: str | None
    clock_ms: Callable[[], int]
    """Processing time in ms since the epoch (timer services)."""
    batch_mode: bool = False
    """The job runs in BATCH execution mode (``execution.runtime-mode``)."""
    restored_source_state: bytes | None = None
    """A source reader's pickled position from the checkpoint the task restores."""
    restored_checkpoint_id: int = 0
    """The id of the checkpoint the task restores, 0 for a fresh start."""


class StreamOperator:
    """Base class: no-op lifecycle; subclasses set ``process`` (and ``process2``) in open."""

    def __init__(self, setup: OperatorSetup) -> None:
        self.setup = setup
        self.name = setup.descriptor.name
        self.process: Output = discard
        self.process2: Output = discard

    def open(self, output: Output) -> None:
        """Open user functions and bind the per-batch path to ``output``."""

    def flush(self) -> None:
        """Buffer timeout: push out anything held back (collect sinks)."""

    def snapshot_state(self, checkpoint_id: int) -> None:
        """The task takes checkpoint ``checkpoint_id``: called in its synchronous part,
        after ``flush`` and before the state is captured and the barrier is sent on.
        Nothing processed before it can be emitted after it. Not called for checkpoints
        that fail before this point. Must be quick (the task is paused); by default
        nothing."""

    def finish(self) -> None:
        """End of input: emit what is still held; called in topological order."""

    def close(self) -> None:
        """Close user functions; called once, also after a failure."""
