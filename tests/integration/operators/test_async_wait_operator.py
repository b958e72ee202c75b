"""The async wait operator with its real event loop (a thread, and asyncio's own
socketpair, hence this tier), driven from the test thread as a task thread drives it:
records and watermarks in, the mailbox drained, checkpoints taken and restored."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from weir.core.ids import OperatorId
from weir.core.job_graph import OperatorDescriptor, OperatorKind
from weir.datastream.async_retry_predicates import empty_result_predicate
from weir.datastream.async_retry_strategies import FixedDelayRetryStrategy
from weir.datastream.functions import AsyncFunction
from weir.taskmanager.mailbox import Mailbox
from weir.taskmanager.operators.async_wait import (
    AsyncFunctionError,
    AsyncWaitCanceledError,
    AsyncWaitOperator,
)
from weir.taskmanager.operators.base import OperatorSetup, Output
from weir.taskmanager.runtime_context import StreamingRuntimeContext
from weir.taskmanager.state.operator_state import DefaultOperatorStateBackend

# How long a test waits for what it awaits before it fails (never reached when it works).
_DEADLINE_S = 30.0


class Gate(AsyncFunction):
    """Each request waits until the test releases its value, then returns ``[value * 10]``;
    counts what runs at once and on which threads."""

    def __init__(self) -> None:
        self.released: set[Any] = set()
        self.started: list[Any] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.threads: set[int] = set()

    async def async_invoke(self, value: Any) -> list[Any]:
        self.started.append(value)
        self.threads.add(threading.get_ident())
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            while value not in self.released:
                await asyncio.sleep(0.001)  # polling interval; the release decides
        finally:
            self.in_flight -= 1
        return [value * 10]

    def release(self, *values: Any) -> None:
        self.released.update(values)


class Harness:
    """An AsyncWaitOperator opened on the test thread, which acts as its task thread."""

    def __init__(
        self,
        function: Any,
        *,
        capacity: int = 10,
        ordered: bool = True,
        timeout_ms: int = 30_000,
        retry: Any = None,
        state: DefaultOperatorStateBackend | None = None,
        canceled: Callable[[], bool] = lambda: False,
    ) -> None:
        self.mailbox = Mailbox()
        self.events: list[tuple[str, Any, Any]] = []
        self.state = state or DefaultOperatorStateBackend()
        context = StreamingRuntimeContext(
            task_name="async",
            task_name_with_subtasks="async (1/1)",
            number_of_parallel_subtasks=1,
            max_number_of_parallel_subtasks=128,
            index_of_this_subtask=0,
            attempt_number=0,
            job_parameters={},
        )
        setup = OperatorSetup(
            descriptor=OperatorDescriptor(
                OperatorId("a" * 32), "async wait operator", OperatorKind.ASYNC_WAIT, b""
            ),
            payload={
                "function": function,
                "timeout_ms": timeout_ms,
                "capacity": capacity,
                "ordered": ordered,
                "retry_strategy": retry,
            },
            runtime_context=context,
            keyed_state_backend=None,
            subtask_index=0,
            parallelism=1,
            segment_size=32 * 1024,
            collect=lambda *_: None,
            print_target=None,
            clock_ms=lambda: 0,
            operator_state_backend=self.state,
            post_mail=self.mailbox.put,
            canceled=canceled,
        )
        self.operator = AsyncWaitOperator(setup)
        self.operator.open(
            Output(
                lambda batch, ts: self.events.append(("records", list(batch), ts)),
                lambda wm: self.events.append(("watermark", wm, None)),
            )
        )

    def process(self, values: list[Any], timestamps: list[int | None] | None = None) -> None:
        self.operator.process(values, timestamps)

    def watermark(self, watermark: int) -> None:
        self.operator.process_watermark(watermark)

    def run_mailbox_until(self, condition: Callable[[], bool], what: str) -> None:
        """Serve the mailbox, as the task does between batches, until ``condition``."""
        deadline = time.monotonic() + _DEADLINE_S
        while not condition():
            if time.monotonic() > deadline:
                pytest.fail(f"timed out waiting for {what}; emitted {self.events}")
            self.mailbox.wait(0.05)
            self.mailbox.run_pending()

    def emitted(self) -> list[Any]:
        """What went out, in order: records, and watermarks as ``"W<ts>"``."""
        out: list[Any] = []
        for kind, value, _ in self.events:
            out.extend(value if kind == "records" else [f"W{value}"])
        return out

    def snapshot(self) -> DefaultOperatorStateBackend:
        """A checkpoint of the operator's state, restored into a fresh backend."""
        self.operator.snapshot_state(1)
        taken = self.state.snapshot()
        restored = DefaultOperatorStateBackend()
        if taken is not None:
            restored.restore([(taken.data, taken.partitions)])
        return restored

    def close(self) -> None:
        self.operator.close()


@pytest.fixture
def harnesses():
    opened: list[Harness] = []

    def make(function: Any, **kwargs: Any) -> Harness:
        harness = Harness(function, **kwargs)
        opened.append(harness)
        return harness

    yield make
    for harness in opened:
        harness.close()


def _wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + _DEADLINE_S
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.002)  # polling interval; the condition decides


class TestOrderedWait:
    def test_results_keep_the_input_order_whatever_completes_first(self, harnesses):
        gate = Gate()
        h = harnesses(gate, ordered=True)
        h.process([1, 2, 3])
        gate.release(3)
        gate.release(2)
        _wait_for(lambda: gate.in_flight == 1, "2 and 3 to complete")
        h.mailbox.run_pending()
        assert h.emitted() == []  # 1 holds them back
        gate.release(1)
        h.run_mailbox_until(lambda: len(h.emitted()) == 3, "every result")
        assert h.emitted() == [10, 20, 30]

    def test_a_watermark_follows_the_results_of_the_records_before_it(self, harnesses):
        gate = Gate()
        h = harnesses(gate, ordered=True)
        h.process([1], [100])
        h.watermark(150)
        h.process([2], [200])
        gate.release(2)
        _wait_for(lambda: gate.in_flight == 1, "2 to complete")
        h.mailbox.run_pending()
        assert h.emitted() == []
        gate.release(1)
        h.run_mailbox_until(lambda: len(h.emitted()) == 3, "every element")
        assert h.emitted() == [10, "W150", 20]
        # Results carry their input's timestamp.
        assert [ts for kind, _, ts in h.events if kind == "records"] == [[100], [200]]
        assert h.operator.current_watermark == 150


class TestUnorderedWait:
    def test_results_go_out_as_they_complete_but_never_across_a_watermark(self, harnesses):
        gate = Gate()
        h = harnesses(gate, ordered=False)
        h.process([1, 2], [10, 20])
        h.watermark(25)
        h.process([3], [30])
        gate.release(3)
        _wait_for(lambda: gate.in_flight == 2, "3 to complete")
        h.mailbox.run_pending()
        assert h.emitted() == []  # 3 came after the watermark, which waits for 1 and 2
        gate.release(2)
        h.run_mailbox_until(lambda: h.emitted() == [20], "the result of 2")
        gate.release(1)
        h.run_mailbox_until(lambda: len(h.emitted()) == 4, "every element")
        assert h.emitted() == [20, 10, "W25", 30]


class TestCapacity:
    def test_a_full_queue_holds_the_input_back_until_a_request_completes(self, harnesses):
        gate = Gate()
        h = harnesses(gate, capacity=2, ordered=False)
        feeding = threading.Thread(target=h.process, args=([1, 2, 3, 4, 5],))
        feeding.start()  # the task thread, from here on, until it returns
        _wait_for(lambda: sorted(gate.started) == [1, 2], "two requests")
        # With two in flight the third record cannot be queued: process() cannot return.
        assert feeding.is_alive()
        gate.release(1)
        _wait_for(lambda: sorted(gate.started) == [1, 2, 3], "the third request")
        assert feeding.is_alive()
        gate.release(2, 3, 4, 5)
        feeding.join(_DEADLINE_S)
        assert not feeding.is_alive()
        h.operator.finish()
        assert sorted(h.emitted()) == [10, 20, 30, 40, 50]
        assert gate.max_in_flight == 2

    def test_coroutines_share_one_event_loop_thread_beside_the_task_thread(self, harnesses):
        gate = Gate()
        h = harnesses(gate, capacity=50)
        gate.release(*range(40))
        h.process(list(range(40)))
        h.operator.finish()
        assert len(h.emitted()) == 40
        assert len(gate.threads) == 1
        assert threading.get_ident() not in gate.threads

    def test_a_cancel_ends_the_wait_for_room(self, harnesses):
        gate = Gate()
        canceled = threading.Event()
        h = harnesses(gate, capacity=1, canceled=canceled.is_set)
        errors: list[BaseException] = []

        def feed() -> None:
            try:
                h.process([1, 2])
            except BaseException as exc:  # what the task thread would unwind with
                errors.append(exc)

        feeding = threading.Thread(target=feed)
        feeding.start()
        _wait_for(lambda: gate.started == [1], "the first request")
        canceled.set()
        feeding.join(_DEADLINE_S)
        assert not feeding.is_alive()
        assert len(errors) == 1
        assert isinstance(errors[0], AsyncWaitCanceledError)


class TestTimeouts:
    def test_timeout_gives_the_results_of_a_request_that_took_too_long(self, harnesses):
        class SlowOne(Gate):
            def timeout(self, value: Any) -> list[Any]:
                return [-value]

        gate = SlowOne()
        h = harnesses(gate, timeout_ms=50)
        gate.release(2)
        h.process([1, 2])
        h.operator.finish()
        assert h.emitted() == [-1, 20]

    def test_the_default_timeout_fails_naming_the_input(self, harnesses):
        h = harnesses(Gate(), timeout_ms=50)
        h.process([7])
        with pytest.raises(AsyncFunctionError, match="during handling input '7'") as raised:
            h.operator.finish()
        assert isinstance(raised.value.__cause__, TimeoutError)
        assert "Async function call has timed out for input: 7" in str(raised.value.__cause__)


class TestFailures:
    def test_an_exception_of_async_invoke_fails_with_its_cause(self, harnesses):
        class Broken(AsyncFunction):
            async def async_invoke(self, value: Any) -> list[Any]:
                raise LookupError(f"no row for {value}")

        h = harnesses(Broken())
        h.process(["k"])
        with pytest.raises(AsyncFunctionError, match="Broken") as raised:
            h.operator.finish()
        assert isinstance(raised.value.__cause__, LookupError)

    @pytest.mark.parametrize(
        ("result", "message"),
        [(None, "cannot be none"), (5, "should be of list type")],
    )
    def test_a_result_that_is_no_list_fails(self, harnesses, result, message):
        class Odd(AsyncFunction):
            async def async_invoke(self, value: Any) -> Any:
                return result

        h = harnesses(Odd())
        h.process([1])
        with pytest.raises(AsyncFunctionError, match=message):
            h.operator.finish()

    def test_any_iterable_result_is_taken(self, harnesses):
        class Tuples(AsyncFunction):
            async def async_invoke(self, value: Any) -> Any:
                return (value, value + 1)

        h = harnesses(Tuples())
        h.process([1])
        h.operator.finish()
        assert h.emitted() == [1, 2]


class TestRetries:
    def test_an_empty_result_is_retried_until_the_strategy_gives_up(self, harnesses):
        class EmptyTwice(AsyncFunction):
            def __init__(self) -> None:
                self.calls: dict[int, int] = {}

            async def async_invoke(self, value: int) -> list[Any]:
                n = self.calls[value] = self.calls.get(value, 0) + 1
                if value == 0 or n < 3:
                    return []
                return [(value, n)]

        function = EmptyTwice()
        strategy = FixedDelayRetryStrategy(4, 1, empty_result_predicate, None)
        h = harnesses(function, retry=strategy)
        h.process([0, 1, 2])
        h.operator.finish()
        assert h.emitted() == [(1, 3), (2, 3)]
        # 0 never satisfies: its first attempt and the strategy's four retries.
        assert function.calls == {0: 5, 1: 3, 2: 3}


class TestCheckpoints:
    def test_requests_in_flight_are_in_the_checkpoint_and_requested_again(self, harnesses):
        gate = Gate()
        h = harnesses(gate, ordered=False)
        h.process([1, 2], [10, 20])
        h.watermark(25)
        h.process([3], [30])
        gate.release(1)
        h.run_mailbox_until(lambda: h.emitted() == [10], "the result of 1")
        state = h.snapshot()
        h.close()

        again = Gate()
        again.release(2, 3)
        restored = harnesses(again, ordered=False, state=state)
        restored.operator.finish()
        # 1 went out before the checkpoint; 2, the watermark and 3 come after the restore.
        assert sorted(again.started) == [2, 3]
        assert restored.emitted() == [20, "W25", 30]
        assert [ts for kind, _, ts in restored.events if kind == "records"] == [[20], [30]]

    def test_a_done_result_held_back_by_the_order_is_requested_again(self, harnesses):
        gate = Gate()
        h = harnesses(gate, ordered=True)
        h.process([1, 2])
        gate.release(2)
        _wait_for(lambda: gate.in_flight == 1, "2 to complete")
        h.mailbox.run_pending()
        assert h.emitted() == []
        state = h.snapshot()
        h.close()

        again = Gate()
        again.release(1, 2)
        restored = harnesses(again, ordered=True, state=state)
        restored.operator.finish()
        assert again.started == [1, 2]
        assert restored.emitted() == [10, 20]
