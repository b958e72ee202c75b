"""The async wait operator: ``AsyncDataStream``'s requests in flight, as Flink's
``AsyncWaitOperator`` keeps them.

Every record becomes an entry of the stream element queue (``async_queue``) and a
request on the operator's event loop (``async_runner``). The task thread alone touches
the queue and emits: outcomes come back from the loop through the runner's inbox and are
handled by ``_drain``, which the task's mailbox runs between two batches, or which the
task thread runs itself while it waits on this operator:

- for room in the queue: with ``capacity`` entries in it, ``process`` (and a watermark)
  waits until one is emitted, so the task reads no more input and its producers are
  back-pressured, as Flink's ``addToWorkQueue`` yields until ``tryPut`` succeeds;
- at the end of input, for every entry to be emitted (``finish``).

Outcomes: results are checked (a list, or any iterable; None is an error), then the
queue says what may go out; a watermark leaves the queue only in its turn, so what came
before it is emitted before it. With a retry strategy, an outcome its predicates accept
is tried again after the back-off while the strategy allows. A timeout calls the
function's ``timeout(value)`` on the task thread and takes its results; by default it
raises, and any exception of ``async_invoke`` or ``timeout`` fails the task, as
PyFlink's does.

Checkpoints: ``snapshot_state`` puts the queue's elements (the input records still in
it, done or not, and the watermarks between them) into the operator's list state
``_async_wait_operator_state_``; ``open`` requests them again on restore. Outcomes that
arrive after the snapshot are emitted after the barrier, so downstream sees each result
once whatever checkpoint a restore starts from.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from weir.core.errors import WeirError
from weir.taskmanager.operators.async_queue import (
    OrderedStreamElementQueue,
    RecordEntry,
    StreamElementQueue,
    UnorderedStreamElementQueue,
    WatermarkEntry,
)
from weir.taskmanager.operators.async_runner import TIMED_OUT, AsyncFunctionRunner
from weir.taskmanager.operators.base import OperatorSetup, Output, StreamOperator, Timestamps
from weir.taskmanager.operators.functions import close_function, open_function, required_method

logger = logging.getLogger(__name__)

# While the task thread waits on this operator it looks for cancellation this often; an
# outcome wakes it at once, so this bounds only how late a cancel is seen.
_WAIT_SLICE_S = 0.05


class AsyncFunctionError(WeirError, RuntimeError):
    """``async_invoke`` or ``timeout`` raised, or returned something that is not a list."""


class AsyncWaitCanceledError(WeirError):
    """The task was cancelled while it waited for requests in flight."""


@dataclass(frozen=True, slots=True)
class _StateName:
    name: str


STATE = _StateName("_async_wait_operator_state_")
"""The operator list state holding the queue's elements in a checkpoint (Flink's name)."""


def _no_retry(_: Any) -> bool:
    return False


class AsyncWaitOperator(StreamOperator):
    """See the module docstring. Payload: ``function`` (an ``AsyncFunction``),
    ``timeout_ms`` (<= 0: none), ``capacity``, ``ordered`` and ``retry_strategy`` (None:
    no retries)."""

    def __init__(self, setup: OperatorSetup) -> None:
        super().__init__(setup)
        payload = setup.payload
        self.function = payload["function"]
        self._timeout_s = int(payload.get("timeout_ms", 0)) / 1000
        capacity = int(payload.get("capacity", 100))
        self._queue: StreamElementQueue = (
            OrderedStreamElementQueue(capacity)
            if payload.get("ordered", True)
            else UnorderedStreamElementQueue(capacity)
        )
        self._retry: Any = payload.get("retry_strategy")
        """The ``AsyncRetryStrategy`` (duck-typed: the services do not import the API), or
        None: no retries."""
        self._retry_result: Callable[[Any], bool] = _no_retry
        self._retry_exception: Callable[[BaseException], bool] = _no_retry
        self._runner: AsyncFunctionRunner | None = None
        self._unstarted: list[RecordEntry] = []
        """Entries queued by the current batch whose request is not handed to the loop
        yet: one hand-over per batch, not per record."""
        self._timeout_function: Callable[[Any], Any] = _default_timeout

    def open(self, output: Output) -> None:
        super().open(output)
        open_function(self.function, self.setup.runtime_context)
        invoke = required_method(self.function, "async_invoke", self.name)
        timeout = getattr(self.function, "timeout", None)
        if callable(timeout):
            self._timeout_function = timeout
        if self._retry is not None:
            predicate = self._retry.get_retry_predicate()
            self._retry_result = predicate.result_predicate() or _no_retry
            self._retry_exception = predicate.exception_predicate() or _no_retry
        post = self.setup.post_mail
        drain = self._drain

        def notify() -> None:
            if post is not None:
                post(drain)

        self._runner = AsyncFunctionRunner(invoke, self._timeout_s, notify, self.name)
        self.process = self._process
        self._restore()

    # --- input ----------------------------------------------------------------------------

    def _process(self, batch: list[Any], timestamps: Timestamps) -> None:
        queue = self._queue
        unstarted = self._unstarted
        for i, value in enumerate(batch):
            if not queue.has_room():
                self._wait_for_room()
            entry = RecordEntry(value, None if timestamps is None else timestamps[i])
            entry.attempts = 1
            queue.add(entry)
            unstarted.append(entry)
        self._start_unstarted()

    def advance_watermark(self, watermark: int) -> None:
        """Queued behind the records before it; forwarded when its turn comes."""
        if not self._queue.has_room():
            self._wait_for_room()
        self._queue.add(WatermarkEntry(watermark))
        self._emit_completed()

    def _start_unstarted(self) -> None:
        unstarted = self._unstarted
        if unstarted:
            assert self._runner is not None
            self._runner.start(unstarted[:])
            unstarted.clear()

    def _wait_for_room(self) -> None:
        self._start_unstarted()
        while not self._queue.has_room():
            self._await_outcomes()

    def _await_outcomes(self) -> None:
        """Wait for outcomes (or a cancel) and handle them, on the task thread."""
        runner = self._runner
        assert runner is not None
        runner.wait(_WAIT_SLICE_S)
        if self.setup.canceled():
            msg = f"operator {self.name!r}: the task was cancelled with requests in flight"
            raise AsyncWaitCanceledError(msg)
        self._drain()

    # --- outcomes -------------------------------------------------------------------------

    def _drain(self) -> None:
        """Handle the outcomes that arrived, then emit what the queue releases."""
        runner = self._runner
        if runner is None:  # closed: a drain queued before the task ended
            return
        for entry, attempt, result, error in runner.take():
            if entry.results is not None:
                continue  # completed already (timed out)
            if attempt == TIMED_OUT:
                self._complete(entry, self._call_timeout(entry))
                continue
            if attempt != entry.attempts:
                continue  # an attempt that a newer one replaced
            if self._retry is not None and self._retry_again(entry, result, error):
                continue
            if error is not None:
                msg = (
                    f"Error happens inside the class '{type(self.function)}' during handling "
                    f"input '{entry.value}'"
                )
                raise AsyncFunctionError(msg) from error
            self._complete(entry, result)
        self._emit_completed()

    def _retry_again(self, entry: RecordEntry, result: Any, error: BaseException | None) -> bool:
        """Schedule another attempt if the strategy's predicates and limits say so."""
        if error is None:
            wanted = result is not None and self._retry_result(result)
        else:
            wanted = self._retry_exception(error)
        strategy = self._retry
        if not wanted or not strategy.can_retry(entry.attempts):
            return False
        delay_ms = strategy.get_backoff_time_millis(entry.attempts)
        entry.attempts += 1
        assert self._runner is not None
        self._runner.retry_later(entry, entry.attempts, max(0, delay_ms) / 1000)
        return True

    def _call_timeout(self, entry: RecordEntry) -> Any:
        try:
            return self._timeout_function(entry.value)
        except Exception as exc:
            msg = (
                f"Error happens inside the class '{type(self.function)}' during handling "
                f"input '{entry.value}'"
            )
            raise AsyncFunctionError(msg) from exc

    def _complete(self, entry: RecordEntry, result: Any) -> None:
        if type(result) is not list:
            if result is None:
                msg = (
                    "The result of AsyncFunction cannot be none, please check the methods "
                    f"'async_invoke' and 'timeout' of class '{type(self.function)}'."
                )
                raise AsyncFunctionError(msg)
            if not isinstance(result, Iterable):
                msg = (
                    "The result of AsyncFunction should be of list type, please check the "
                    f"methods 'async_invoke' and 'timeout' of class '{type(self.function)}'; "
                    f"got {type(result).__name__!r} for input '{entry.value}'."
                )
                raise AsyncFunctionError(msg)
            result = list(result)
        entry.results = result
        self._queue.completed(entry)

    def _emit_completed(self) -> None:
        """Emit what the queue releases: results with their input's timestamp, as one
        batch between two watermarks."""
        released = self._queue.pop_completed()
        if not released:
            return
        collect = self.output.collect
        records: list[Any] = []
        stamps: list[int | None] = []
        stamped = False
        for entry in released:
            if isinstance(entry, WatermarkEntry):
                if records:
                    collect(records, stamps if stamped else None)
                    records, stamps, stamped = [], [], False
                self.current_watermark = entry.timestamp
                self.output.emit_watermark(entry.timestamp)
                continue
            results = entry.results
            if results:
                records.extend(results)
                timestamp = entry.timestamp
                if timestamp is not None:
                    stamped = True
                stamps.extend([timestamp] * len(results))
        if records:
            collect(records, stamps if stamped else None)

    # --- lifecycle ------------------------------------------------------------------------

    def finish(self) -> None:
        """End of input: every entry is awaited and emitted. Retries go on as the strategy
        says, as in PyFlink (Flink's Java operator instead makes each waiting retry at
        once, as the last)."""
        self._start_unstarted()
        while len(self._queue):
            self._await_outcomes()

    def snapshot_state(self, checkpoint_id: int) -> None:
        self._start_unstarted()
        state = self.setup.operator_state_backend.get_list_state(STATE)
        state.update([entry.element() for entry in self._queue.entries()])

    def _restore(self) -> None:
        """Request again what the restored checkpoint had in flight, in its order."""
        state = self.setup.operator_state_backend.get_list_state(STATE)
        elements = state.get()
        if not elements:
            return
        state.clear()
        logger.info(
            "%s: requesting again %d elements in flight at the checkpoint", self.name, len(elements)
        )
        for element in elements:
            if element[0] == "watermark":
                self.advance_watermark(element[1])
            else:
                self._process([element[1]], None if element[2] is None else [element[2]])

    def close(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            runner.close()
        close_function(self.function)


def _default_timeout(value: Any) -> Any:
    raise TimeoutError("Async function call has timed out for input: " + str(value))
