"""The built-in Count on processing-time windows over batches of columns, in a real job:
numbers made columns by a batch function cross a key-group edge into tumbling
processing-time windows, which fire on the TaskManager's wall clock. Which window a
record falls in depends on when it arrives, so the test asserts only what does not: the
counts of all windows add up to exactly the number of records. The source holds its last
number back until the test has seen every record counted (open windows are dropped at
end of input, as in Flink), so the job ends only after every window fired."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest
from held_numbers import FileExists, HeldNumbers

from weir.common import Time, Types, WatermarkStrategy
from weir.datastream import StreamExecutionEnvironment
from weir.datastream.aggregate_functions import Count
from weir.datastream.window import TumblingProcessingTimeWindows

pytestmark = [pytest.mark.spark, pytest.mark.long]

RECORDS = 200_000
KEYS = 101
# Only if records went missing does the total never reach RECORDS: the job is then let
# go after this long, and the assertion fails instead of the test hanging.
GIVE_UP_S = 300


def test_window_counts_over_columns_add_up_to_every_record(cluster, tmp_path):
    release = tmp_path / "release"
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    counts = (
        env.from_source(
            # Number RECORDS waits for the release and is dropped below.
            HeldNumbers(0, RECORDS, {RECORDS: FileExists(release)}),
            WatermarkStrategy.no_watermarks(),
            "numbers",
        )
        .set_parallelism(1)
        .map_batches(_pairs, Types.TUPLE([Types.LONG(), Types.LONG()]), batch_format="numpy")
        .key_by(lambda pair: pair[0])
        .window(TumblingProcessingTimeWindows.of(Time.milliseconds(50)))
        .aggregate(Count())
    )
    give_up = threading.Timer(GIVE_UP_S, Path(release).touch)
    give_up.start()
    total = 0
    fired = 0
    try:
        with counts.execute_and_collect() as results:
            for count in results:
                total += count
                fired += 1
                if total >= RECORDS:
                    Path(release).touch()
    finally:
        give_up.cancel()
    assert total == RECORDS
    assert fired >= KEYS  # each key's count in at least one window


def _pairs(numbers: np.ndarray) -> dict[str, np.ndarray]:
    numbers = numbers[numbers < RECORDS]
    return {"f0": numbers % KEYS, "f1": numbers}
