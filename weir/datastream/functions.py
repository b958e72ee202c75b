"""User-function interfaces (mirrors ``pyflink.datastream.functions``).

Wherever PyFlink accepts a plain callable (``map``, ``flat_map``, ``filter``, ``reduce``,
``key_by``, ``partition_custom``, ``add_sink``) so do we. ``flat_map``, ``process_element``
and ``on_timer`` may ``yield`` their outputs or return an iterable (or ``None`` for none);
the task consumes either, in order.

Functions are pickled on the client and unpickled in every subtask, so they must be
picklable: create connections, clients, locks and files in ``open()``, not ``__init__``.
``open()`` is called once per subtask before the first record, ``close()`` after the
last one (it is not called if the task fails before ``open()`` completes).

A function keeps operator state across checkpoints by also subclassing
``CheckpointedFunction`` (Flink's, beyond PyFlink): ``initialize_state(context)`` before
``open()`` takes list, union list or broadcast state from
``context.get_operator_state_store()``, and ``snapshot_state(context)`` updates them at
each checkpoint. A function that is no CheckpointedFunction may instead define the raw
hooks ``snapshot_state(checkpoint_id) -> bytes`` and ``initialize_state(bytes | None)``
(called only on restore); ``weir.core.checkpointed_function`` describes both forms.
"""

from __future__ import annotations

import abc
import logging
from collections.abc import Iterable
from typing import Any

from weir.common.typeinfo import Types
from weir.core.checkpointed_function import (
    CheckpointedFunction,
    FunctionInitializationContext,
    FunctionSnapshotContext,
)
from weir.datastream.async_functions import (
    AsyncFunction,
    AsyncRetryPredicate,
    AsyncRetryStrategy,
)
from weir.datastream.broadcast_functions import (
    BaseBroadcastProcessFunction,
    BroadcastProcessFunction,
    KeyedBroadcastProcessFunction,
    KeyedStateFunction,
)
from weir.datastream.function_base import Function, RuntimeContext
from weir.datastream.state import ListState, ListStateDescriptor
from weir.datastream.timerservice import TimerService
from weir.datastream.window_functions import (
    AllWindowFunction,
    KeyedStateStore,
    ProcessAllWindowFunction,
    ProcessWindowFunction,
    WindowFunction,
)

logger = logging.getLogger(__name__)

__all__ = [
    "AggregateFunction",
    "AllWindowFunction",
    "AsyncFunction",
    "AsyncRetryPredicate",
    "AsyncRetryStrategy",
    "BaseBroadcastProcessFunction",
    "BroadcastProcessFunction",
    "CheckpointListener",
    "CheckpointedFunction",
    "CoFlatMapFunction",
    "CoMapFunction",
    "CoProcessFunction",
    "FilterFunction",
    "FlatMapFunction",
    "Function",
    "FunctionInitializationContext",
    "FunctionSnapshotContext",
    "KeySelector",
    "KeyedBroadcastProcessFunction",
    "KeyedCoProcessFunction",
    "KeyedProcessFunction",
    "KeyedStateFunction",
    "KeyedStateStore",
    "MapFunction",
    "Partitioner",
    "ProcessAllWindowFunction",
    "ProcessFunction",
    "ProcessWindowFunction",
    "ReduceFunction",
    "RuntimeContext",
    "SinkFunction",
    "SourceFunction",
    "TwoPhaseCommitSinkFunction",
    "WindowFunction",
]


class MapFunction(Function):
    @abc.abstractmethod
    def map(self, value: Any) -> Any:
        pass


class CoMapFunction(Function):
    @abc.abstractmethod
    def map1(self, value: Any) -> Any:
        pass

    @abc.abstractmethod
    def map2(self, value: Any) -> Any:
        pass


class FlatMapFunction(Function):
    @abc.abstractmethod
    def flat_map(self, value: Any) -> Iterable[Any] | None:
        """Yield (or return an iterable of) zero or more outputs."""


class CoFlatMapFunction(Function):
    @abc.abstractmethod
    def flat_map1(self, value: Any) -> Iterable[Any] | None:
        pass

    @abc.abstractmethod
    def flat_map2(self, value: Any) -> Iterable[Any] | None:
        pass


class ReduceFunction(Function):
    @abc.abstractmethod
    def reduce(self, value1: Any, value2: Any) -> Any:
        pass


class AggregateFunction(Function):
    """Incremental aggregation with an accumulator (PyFlink's AggregateFunction), as used by
    AggregatingStateDescriptor::

        class Average(AggregateFunction):
            def create_accumulator(self):
                return 0, 0
            def add(self, value, accumulator):
                return accumulator[0] + value, accumulator[1] + 1
            def get_result(self, accumulator):
                return accumulator[0] / accumulator[1]
            def merge(self, acc_a, acc_b):
                return acc_a[0] + acc_b[0], acc_a[1] + acc_b[1]
    """

    @abc.abstractmethod
    def create_accumulator(self) -> Any:
        pass

    @abc.abstractmethod
    def add(self, value: Any, accumulator: Any) -> Any:
        pass

    @abc.abstractmethod
    def get_result(self, accumulator: Any) -> Any:
        pass

    @abc.abstractmethod
    def merge(self, acc_a: Any, acc_b: Any) -> Any:
        pass


class FilterFunction(Function):
    @abc.abstractmethod
    def filter(self, value: Any) -> bool:
        pass


class KeySelector(Function):
    @abc.abstractmethod
    def get_key(self, value: Any) -> Any:
        pass


class Partitioner(Function):
    @abc.abstractmethod
    def partition(self, key: Any, num_partitions: int) -> int:
        """The index in ``[0, num_partitions)`` of the subtask that gets ``key``."""


class ProcessFunction(Function):
    """Processes each element; may yield any number of outputs."""

    class Context(abc.ABC):
        @abc.abstractmethod
        def timer_service(self) -> TimerService:
            pass

        @abc.abstractmethod
        def timestamp(self) -> int | None:
            """The timestamp of the current element, or None if it has none."""

    @abc.abstractmethod
    def process_element(self, value: Any, ctx: ProcessFunction.Context) -> Iterable[Any] | None:
        pass


class KeyedProcessFunction(Function):
    """Processes each element of a KeyedStream with keyed state and (later) timers."""

    class Context(abc.ABC):
        @abc.abstractmethod
        def get_current_key(self) -> Any:
            pass

        @abc.abstractmethod
        def timer_service(self) -> TimerService:
            pass

        @abc.abstractmethod
        def timestamp(self) -> int | None:
            pass

    class OnTimerContext(Context):
        @abc.abstractmethod
        def time_domain(self) -> Any:
            pass

    @abc.abstractmethod
    def process_element(
        self, value: Any, ctx: KeyedProcessFunction.Context
    ) -> Iterable[Any] | None:
        pass

    def on_timer(
        self, timestamp: int, ctx: KeyedProcessFunction.OnTimerContext
    ) -> Iterable[Any] | None:
        """Called when a timer fires; may yield outputs."""
        return None


class CoProcessFunction(Function):
    class Context(abc.ABC):
        @abc.abstractmethod
        def timer_service(self) -> TimerService:
            pass

        @abc.abstractmethod
        def timestamp(self) -> int | None:
            pass

    @abc.abstractmethod
    def process_element1(self, value: Any, ctx: CoProcessFunction.Context) -> Any:
        pass

    @abc.abstractmethod
    def process_element2(self, value: Any, ctx: CoProcessFunction.Context) -> Any:
        pass


class KeyedCoProcessFunction(Function):
    class Context(abc.ABC):
        @abc.abstractmethod
        def get_current_key(self) -> Any:
            pass

        @abc.abstractmethod
        def timer_service(self) -> TimerService:
            pass

        @abc.abstractmethod
        def timestamp(self) -> int | None:
            pass

    class OnTimerContext(Context):
        @abc.abstractmethod
        def time_domain(self) -> Any:
            pass

    @abc.abstractmethod
    def process_element1(self, value: Any, ctx: KeyedCoProcessFunction.Context) -> Any:
        pass

    @abc.abstractmethod
    def process_element2(self, value: Any, ctx: KeyedCoProcessFunction.Context) -> Any:
        pass

    def on_timer(self, timestamp: int, ctx: KeyedCoProcessFunction.OnTimerContext) -> Any:
        return None


class SinkFunction(Function):
    """Receives every record: ``invoke(value, context)``; ``context`` may be None."""

    @abc.abstractmethod
    def invoke(self, value: Any, context: Any) -> None:
        pass


class SourceFunction(Function):
    """A non-parallel source (parallelism 1): ``run(ctx)`` emits with ``ctx.collect(value)``
    until the input ends or ``cancel()`` is called (from another thread)."""

    @abc.abstractmethod
    def run(self, ctx: Any) -> None:
        pass

    @abc.abstractmethod
    def cancel(self) -> None:
        pass


class CheckpointListener(abc.ABC):
    """Mixin for functions that act when a checkpoint completes or is aborted.

    Both hooks are called on the task thread, between records, after the checkpoint's
    ``snapshot_state``. A notification may be skipped (a later one subsumes it), so a
    listener acts on every checkpoint id *up to* the one notified, never only on that one.
    Notifications are not called after ``close()``.
    """

    @abc.abstractmethod
    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        """Checkpoint ``checkpoint_id`` (and every earlier one) is complete and durable."""

    def notify_checkpoint_aborted(self, checkpoint_id: int) -> None:  # noqa: B027 - optional
        """Checkpoint ``checkpoint_id`` was aborted; what it covered joins the next one."""


class TwoPhaseCommitSinkFunction(SinkFunction, CheckpointedFunction, CheckpointListener):
    """Base of exactly-once sinks over transactions, as Flink's TwoPhaseCommitSinkFunction.

    Records go into the *current* transaction. At a checkpoint the current transaction is
    pre-committed (flushed, ready to commit, nothing visible yet), kept as pending under
    the checkpoint id, and a new one begins. When the checkpoint completes, every pending
    transaction up to its id is committed. On recovery from a checkpoint, its pending
    transactions are committed (again: ``recover_and_commit`` must be idempotent) and the
    transaction that was open at that checkpoint is aborted, so output written after the
    checkpoint never shows. At the end of bounded input (``finish()``) the current
    transaction is pre-committed and no new one begins; the task's final checkpoint
    (taken after ``finish()``) makes it pending and commits it when it completes. Without
    checkpoints, the task does both at once at the end of input.

    Subclasses implement ``begin_transaction``, ``invoke(transaction, value, context)``,
    ``pre_commit``, ``commit`` and ``abort``; ``recover_and_commit`` and
    ``recover_and_abort`` default to ``commit`` and ``abort``. Transactions are stored in
    the checkpoint's operator state (a list state named ``state``, as Flink's), so they
    must be picklable handles (a file name, a transaction id), not open connections::

        class StagedFileSink(TwoPhaseCommitSinkFunction):
            def begin_transaction(self):
                return {"tmp": f"/out/.{uuid.uuid4()}", "lines": []}

            def invoke(self, transaction, value, context):
                transaction["lines"].append(str(value))

            def pre_commit(self, transaction):
                with open(transaction["tmp"], "w") as f:
                    f.write("".join(line + "\\n" for line in transaction["lines"]))

            def commit(self, transaction):
                if os.path.exists(transaction["tmp"]):
                    os.rename(transaction["tmp"], transaction["tmp"].replace("/.", "/", 1))

            def abort(self, transaction):
                if os.path.exists(transaction["tmp"]):
                    os.remove(transaction["tmp"])

    Contract with the task (all calls on the task thread, in this order):
    ``initialize_state(context)`` → ``open`` → ``invoke``\\* interleaved with
    ``snapshot_state(context)`` of checkpoint n and ``notify_checkpoint_complete(n)`` /
    ``notify_checkpoint_aborted(n)`` → ``finish()`` at the end of bounded input → the final
    checkpoint's ``snapshot_state`` and ``notify_checkpoint_complete(n)`` → ``close()``
    (also after a failure; it aborts the open transaction and never commits).
    If ``initialize_state`` has not been called before the first record, the base
    initialises itself as for a fresh start (and keeps no state).
    """

    def __init__(self) -> None:
        self._current_transaction: Any = None
        self._has_transaction = False
        self._state: ListState | None = None
        # checkpoint id -> pre-committed transaction, in checkpoint order
        self._pending_commit_transactions: dict[int, Any] = {}
        self._initialized = False
        # finish() pre-committed this one; the next snapshot makes it pending.
        self._finished = False
        self._finished_transaction: Any = None
        self._has_finished_transaction = False

    # -- the transaction API subclasses implement --------------------------------------
    @abc.abstractmethod
    def begin_transaction(self) -> Any:
        """Starts a new transaction and returns its (picklable) handle."""

    @abc.abstractmethod
    def invoke(self, transaction: Any, value: Any, context: Any) -> None:  # type: ignore[override]
        """Writes ``value`` into ``transaction``."""

    @abc.abstractmethod
    def pre_commit(self, transaction: Any) -> None:
        """Makes ``transaction`` ready to commit (flush, stage); it takes no more records."""

    @abc.abstractmethod
    def commit(self, transaction: Any) -> None:
        """Makes a pre-committed transaction visible. Must be idempotent."""

    @abc.abstractmethod
    def abort(self, transaction: Any) -> None:
        """Discards a transaction."""

    def recover_and_commit(self, transaction: Any) -> None:
        """Commits a transaction restored from a checkpoint (it may be committed already)."""
        self.commit(transaction)

    def recover_and_abort(self, transaction: Any) -> None:
        """Aborts a transaction restored from a checkpoint (it may be gone already)."""
        self.abort(transaction)

    # -- the hooks the task calls -------------------------------------------------------
    def initialize_state(self, context: FunctionInitializationContext) -> None:
        """Takes the list state ``state``; on recovery, commits the pending transactions
        it holds and aborts the one that was open (of every subtask whose state this one
        got: one at the same parallelism)."""
        self._state = context.get_operator_state_store().get_list_state(
            ListStateDescriptor("state", Types.PICKLED_BYTE_ARRAY())
        )
        if context.is_restored():
            for restored in self._state.get():
                for checkpoint_id, transaction in sorted(restored["pending"].items()):
                    logger.info(
                        "committing the transaction of checkpoint %d on recovery", checkpoint_id
                    )
                    self.recover_and_commit(transaction)
                if restored["has_current"]:
                    self.recover_and_abort(restored["current"])
        self._start()

    def _start(self) -> None:
        self._pending_commit_transactions = {}
        self._begin()
        self._initialized = True

    def snapshot_state(self, context: FunctionSnapshotContext) -> None:
        """Pre-commits the current transaction as the checkpoint's, begins a new one, and
        stores the pending and the open transactions in the state."""
        self._ensure_initialized()
        checkpoint_id = context.get_checkpoint_id()
        if checkpoint_id in self._pending_commit_transactions or any(
            c > checkpoint_id for c in self._pending_commit_transactions
        ):
            msg = (
                f"snapshot_state({checkpoint_id}): checkpoint ids must increase; pending "
                f"ones are {sorted(self._pending_commit_transactions)}"
            )
            raise ValueError(msg)
        if self._finished:
            if self._has_finished_transaction:
                self._pending_commit_transactions[checkpoint_id] = self._finished_transaction
                self._has_finished_transaction = False
                self._finished_transaction = None
            stored = {"pending": dict(self._pending_commit_transactions), "has_current": False}
        else:
            self.pre_commit(self._current_transaction)
            self._pending_commit_transactions[checkpoint_id] = self._current_transaction
            self._begin()
            stored = {
                "pending": dict(self._pending_commit_transactions),
                "has_current": True,
                "current": self._current_transaction,
            }
        if self._state is not None:
            self._state.update([stored])

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        """Commits every pending transaction of a checkpoint up to ``checkpoint_id``."""
        for pending_id in sorted(self._pending_commit_transactions):
            if pending_id > checkpoint_id:
                break
            self.commit(self._pending_commit_transactions.pop(pending_id))

    def notify_checkpoint_aborted(self, checkpoint_id: int) -> None:
        """Keeps the pre-committed transaction pending: its records were consumed, so the
        next completed checkpoint commits it (as Flink does)."""

    def finish(self) -> None:
        """End of bounded input: pre-commit the current transaction and begin no other.
        The next ``snapshot_state`` (the final checkpoint) makes it pending; its
        completion commits it."""
        self._ensure_initialized()
        if self._has_transaction:
            transaction = self._current_transaction
            self._has_transaction = False
            self._current_transaction = None
            self.pre_commit(transaction)
            self._finished_transaction = transaction
            self._has_finished_transaction = True
        self._finished = True

    def close(self) -> None:
        """Aborts the open transaction (pending ones stay for recovery)."""
        if self._has_transaction:
            transaction = self._current_transaction
            self._has_transaction = False
            self._current_transaction = None
            self.abort(transaction)

    # -- internals ------------------------------------------------------------------------
    def _begin(self) -> None:
        self._current_transaction = self.begin_transaction()
        self._has_transaction = True

    def _ensure_initialized(self) -> None:
        if not self._initialized:
            self._start()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # The task calls ``invoke(value, context)`` on every SinkFunction; a subclass
        # defines Flink's ``invoke(transaction, value, context)``. Keep the subclass's
        # method aside and put a dispatcher in its place that accepts both calls.
        super().__init_subclass__(**kwargs)
        user_invoke = cls.__dict__.get("invoke")
        if user_invoke is not None and not getattr(user_invoke, "_dispatches", False):
            cls._invoke_in_transaction = user_invoke  # type: ignore[attr-defined]
            cls.invoke = TwoPhaseCommitSinkFunction._dispatch_invoke  # type: ignore[method-assign,assignment]

    def _dispatch_invoke(self, *args: Any) -> None:
        if len(args) == 2:  # from the task: (value, context)
            self._ensure_initialized()
            self._invoke_in_transaction(self._current_transaction, *args)  # type: ignore[attr-defined]
        else:  # a direct call with the transaction
            self._invoke_in_transaction(*args)  # type: ignore[attr-defined]

    _dispatch_invoke._dispatches = True  # type: ignore[attr-defined]
