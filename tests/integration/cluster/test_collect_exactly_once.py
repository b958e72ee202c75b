"""execute_and_collect on the MiniCluster: with checkpointing on, a job that fails over
mid-stream hands the client every record exactly once; without checkpointing, records
reach the client while the job runs, as before."""

from __future__ import annotations

import collections
import os
import time

import pytest

from weir.common import Configuration, WatermarkStrategy
from weir.datastream import CheckpointingMode, MapFunction, StreamExecutionEnvironment
from weir.datastream.connectors.number_seq import NumberSequenceSource

pytestmark = pytest.mark.spark

RECORDS = 60_000
# Records each map subtask passes on after the first completed checkpoint before it
# fails: several buffer timeouts' worth at the throttled rate, so the collect sink has
# pushed records of the epoch that the restart replays (without the hold-back, the
# client would see them twice).
RECORDS_AFTER_CHECKPOINT = 2_000


class FailOnceAfterACheckpoint(MapFunction):
    """In the first attempt only (no marker file yet), raises after it passed
    ``RECORDS_AFTER_CHECKPOINT`` records on since a checkpoint completed."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.first_attempt = False
        self.after_checkpoint: int | None = None

    def open(self, runtime_context) -> None:
        self.first_attempt = not os.path.exists(os.path.join(self.directory, "failed"))

    def map(self, value):
        if self.first_attempt:
            if self.after_checkpoint is not None:
                self.after_checkpoint += 1
                if self.after_checkpoint > RECORDS_AFTER_CHECKPOINT:
                    with open(os.path.join(self.directory, "failed"), "a"):
                        pass
                    msg = f"injected failure at {value}"
                    raise RuntimeError(msg)
            # Throttles the first attempt so it runs long enough to take a checkpoint and
            # then fail with records of the next epoch in flight; not a synchronisation.
            time.sleep(0.0002)
        return value

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        if self.first_attempt and self.after_checkpoint is None:
            self.after_checkpoint = 0


def _env(checkpointing: bool) -> StreamExecutionEnvironment:
    configuration = Configuration()
    configuration.set_string("restart-strategy.type", "fixed-delay")
    configuration.set_string("restart-strategy.fixed-delay.attempts", "3")
    configuration.set_string("restart-strategy.fixed-delay.delay", "100 ms")
    env = StreamExecutionEnvironment.get_execution_environment(configuration)
    env.set_parallelism(2)
    if checkpointing:
        # Long enough that the failure (RECORDS_AFTER_CHECKPOINT records, ~0.5 s, after
        # the first completion) comes before the next checkpoint completes.
        env.enable_checkpointing(1_500, CheckpointingMode.EXACTLY_ONCE)
    return env


def test_failover_shows_the_client_every_record_exactly_once(cluster, tmp_path):
    env = _env(checkpointing=True)
    numbers = env.from_source(
        NumberSequenceSource(0, RECORDS - 1), WatermarkStrategy.no_watermarks(), "numbers"
    )
    collected = numbers.map(FailOnceAfterACheckpoint(str(tmp_path))).execute_and_collect()
    with collected as results:
        got = collections.Counter(results)

    assert (tmp_path / "failed").exists(), "the injected failure never happened"
    duplicates = {value: n for value, n in got.items() if n > 1}
    assert not duplicates, f"{len(duplicates)} records reached the client more than once"
    assert got == collections.Counter(range(RECORDS))


@pytest.mark.timeout(120)
def test_without_checkpointing_records_are_visible_while_the_job_runs(cluster):
    env = _env(checkpointing=False)
    # Never ends in this test's time: the records can only come from a running job.
    numbers = env.from_source(
        NumberSequenceSource(0, 2**62), WatermarkStrategy.no_watermarks(), "numbers"
    )
    first = numbers.execute_and_collect(limit=1_000)
    assert len(first) == 1_000
    assert len(set(first)) == 1_000


@pytest.mark.timeout(120)
def test_with_checkpointing_records_of_a_running_job_arrive_after_a_checkpoint(cluster):
    env = _env(checkpointing=True)
    numbers = env.from_source(
        NumberSequenceSource(0, 2**62), WatermarkStrategy.no_watermarks(), "numbers"
    )
    first = numbers.execute_and_collect(limit=1_000)
    assert len(set(first)) == 1_000
