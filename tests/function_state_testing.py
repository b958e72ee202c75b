"""Driving a user function's state hooks as a task does, without a task: the real
operator state backend and the runtime's hook calls, for tests of sinks and sources
that keep operator state (``CheckpointedFunction``)."""

from __future__ import annotations

from typing import Any

from weir.taskmanager.operators.function_state import (
    initialize_function_state,
    snapshot_function_state,
)
from weir.taskmanager.state.operator_state import (
    DefaultOperatorStateBackend,
    OperatorStateSnapshot,
)


class StateHooks:
    """``StateHooks(sink).initialize()`` on a fresh start or ``.initialize(snapshot)`` on
    recovery, then ``snapshot(n)`` at checkpoint ``n``: what the task stores."""

    __test__ = False

    def __init__(self, function: Any) -> None:
        self.function = function
        self.store = DefaultOperatorStateBackend()

    def initialize(self, restored: OperatorStateSnapshot | None = None) -> StateHooks:
        if restored is None:
            initialize_function_state(self.function, self.store)
            return self
        self.store.restore([(restored.data, restored.partitions)])
        return self.initialize_with_restored_store()

    def initialize_with_restored_store(self) -> StateHooks:
        """Initialize as restored, from what was loaded into ``store`` already."""
        initialize_function_state(
            self.function, self.store, restored=True, restored_checkpoint_id=1
        )
        return self

    def snapshot(self, checkpoint_id: int) -> OperatorStateSnapshot:
        snapshot_function_state(self.function, self.store, checkpoint_id, 0)
        snapshot = self.store.snapshot()
        assert snapshot is not None
        return snapshot
