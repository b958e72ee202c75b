"""``CheckpointedFunction``: the state hooks of a user function that keeps operator state
(Flink's ``CheckpointedFunction``, which PyFlink lacks), and the contexts they receive.

It lives in ``weir.core`` because the task runtime recognises it (the services import
nothing of the user API); users import it from ``weir.datastream.functions``.

A user function may keep state across checkpoints in one of two forms; the task tells
them apart by this base class:

- **context form** (this class, as in Flink): ``initialize_state(context)`` is called
  once per subtask, before ``open()``, on a fresh start and on restore alike
  (``context.is_restored()``); the function takes its states from
  ``context.get_operator_state_store()`` there (``get_list_state``,
  ``get_union_list_state``, ``get_broadcast_state``) and keeps them.
  ``snapshot_state(context)`` is called at every checkpoint, on the task thread between
  two records, before the states are captured: it brings them up to date. The runtime
  stores and restores them, and redistributes them by kind when a job is restored at
  another parallelism.
- **raw form** (Weir's own, for functions that are no CheckpointedFunction): a
  ``snapshot_state(checkpoint_id) -> bytes`` whose bytes are stored with the checkpoint,
  and an ``initialize_state(bytes | None)`` called before ``open()`` only when the task
  is restored, with the bytes of the restored checkpoint (None if there were none).
  One blob per subtask: it cannot be split or merged when the parallelism changes.
"""

from __future__ import annotations

import abc
from typing import Any

__all__ = ["CheckpointedFunction", "FunctionInitializationContext", "FunctionSnapshotContext"]


class FunctionSnapshotContext(abc.ABC):
    """What ``snapshot_state`` learns of the checkpoint being taken."""

    @abc.abstractmethod
    def get_checkpoint_id(self) -> int:
        """The id of the checkpoint; ids increase."""

    @abc.abstractmethod
    def get_checkpoint_timestamp(self) -> int:
        """When the checkpoint was triggered, in ms since the epoch."""


class FunctionInitializationContext(abc.ABC):
    """What ``initialize_state`` gets: the state stores and whether they were restored."""

    @abc.abstractmethod
    def is_restored(self) -> bool:
        """True when the task restores a checkpoint (the states hold what was stored)."""

    @abc.abstractmethod
    def get_restored_checkpoint_id(self) -> int | None:
        """The id of the restored checkpoint; None on a fresh start."""

    @abc.abstractmethod
    def get_operator_state_store(self) -> Any:
        """The OperatorStateStore of this operator in this subtask."""

    @abc.abstractmethod
    def get_keyed_state_store(self) -> Any:
        """The KeyedStateStore (``get_state``, ``get_list_state``, ...) when the function
        runs on a KeyedStream, else None. Keyed state is per key: use it from the
        record-processing methods, where a key is set."""


class CheckpointedFunction(abc.ABC):
    """A function with operator state (list, union list or broadcast state)::

        class BufferingSink(SinkFunction, CheckpointedFunction):
            def __init__(self):
                self.buffer = []

            def initialize_state(self, context):
                self.state = context.get_operator_state_store().get_list_state(
                    ListStateDescriptor("buffered", Types.PICKLED_BYTE_ARRAY()))
                self.buffer = list(self.state.get())

            def snapshot_state(self, context):
                self.state.update(self.buffer)

            def invoke(self, value, context):
                self.buffer.append(value)

    Both hooks run on the task thread, never concurrently with the record methods.
    """

    @abc.abstractmethod
    def snapshot_state(self, context: FunctionSnapshotContext) -> None:
        """Checkpoint ``context.get_checkpoint_id()`` is being taken: update the states."""

    @abc.abstractmethod
    def initialize_state(self, context: FunctionInitializationContext) -> None:
        """Before ``open()``: take the states from ``context``; they hold the restored
        contents when ``context.is_restored()``."""
