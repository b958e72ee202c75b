"""AsyncDataStream on the MiniCluster: a job that fails while requests are in flight
restores them from its checkpoint, and the client sees every result exactly once."""

from __future__ import annotations

import asyncio
import collections
import threading
from typing import Any

import pytest

from weir.common import Configuration, Time, Types, WatermarkStrategy
from weir.datastream import AsyncDataStream, CheckpointingMode, StreamExecutionEnvironment
from weir.datastream.connectors.number_seq import NumberSequenceSource
from weir.datastream.functions import AsyncFunction, CheckpointedFunction, CheckpointListener

pytestmark = pytest.mark.spark

HELD = 100
"""The element whose request, in the first attempt, outlives a checkpoint and then fails."""
CAPACITY = 10
RESULTS = 3_000


class FailsWithARequestInFlight(AsyncFunction, CheckpointedFunction, CheckpointListener):
    """In the first attempt, the request for ``HELD`` waits until a checkpoint taken while
    it was in flight has completed, then fails the task. That checkpoint is the one the
    job restores, and the source restarts after ``HELD``: only the restored request can
    bring its result."""

    def initialize_state(self, context: Any) -> None:
        pass

    def open(self, runtime_context: Any) -> None:
        self.attempt = runtime_context.get_attempt_number()
        self.held_started = False
        self.covering: int | None = None
        self.covered = threading.Event()

    def snapshot_state(self, context: Any) -> None:
        if self.held_started and self.covering is None:
            self.covering = context.get_checkpoint_id()

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        if self.covering is not None and checkpoint_id >= self.covering:
            self.covered.set()

    async def async_invoke(self, value: int) -> list[Any]:
        if self.attempt == 0:
            if value == HELD:
                self.held_started = True
                while not self.covered.is_set():
                    await asyncio.sleep(0.005)  # polling interval; the checkpoint decides
                msg = f"injected failure with requests in flight, at {value}"
                raise RuntimeError(msg)
            if value > HELD:
                # Keeps the first attempt from running far ahead before it fails; not a
                # synchronisation.
                await asyncio.sleep(0.02)
        await asyncio.sleep(0.002)
        return [(value, self.attempt)]


def test_a_failure_with_requests_in_flight_loses_and_duplicates_nothing(cluster):
    configuration = Configuration()
    configuration.set_string("restart-strategy.type", "fixed-delay")
    configuration.set_string("restart-strategy.fixed-delay.attempts", "3")
    configuration.set_string("restart-strategy.fixed-delay.delay", "100 ms")
    env = StreamExecutionEnvironment.get_execution_environment(configuration)
    env.set_parallelism(1)
    env.enable_checkpointing(100, CheckpointingMode.EXACTLY_ONCE)
    # Never ends in this test's time: the client stops it after RESULTS results.
    numbers = env.from_source(
        NumberSequenceSource(0, 2**62), WatermarkStrategy.no_watermarks(), "numbers"
    )
    results = AsyncDataStream.unordered_wait(
        numbers,
        FailsWithARequestInFlight(),
        Time.seconds(60),
        CAPACITY,
        Types.TUPLE([Types.LONG(), Types.INT()]),
    ).execute_and_collect(limit=RESULTS)

    values = collections.Counter(value for value, _ in results)
    duplicates = {value: n for value, n in values.items() if n > 1}
    assert not duplicates, f"{len(duplicates)} results reached the client more than once"
    # Restored from the checkpoint that had it in flight, and requested again.
    assert (HELD, 1) in results
    # Unordered results overtake at most the requests in flight beside them.
    missing = set(range(RESULTS - CAPACITY)) - set(values)
    assert not missing, f"lost: {sorted(missing)[:20]}"
