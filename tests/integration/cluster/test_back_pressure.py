"""A slow sink throttles the source: in-flight data stays bounded (counted, not timed)."""

from __future__ import annotations

import json
import os
import time

import pytest

from weir.common import Configuration, WatermarkStrategy
from weir.datastream import StreamExecutionEnvironment
from weir.datastream.functions import SinkFunction

pytestmark = pytest.mark.spark

SOURCE_RECORDS = 2_000_000
CHECK_AFTER = 3_000


class ProgressSource:
    """Bounded ints; publishes how many it has produced (read by the sink's process)."""

    def __init__(self, progress_file: str) -> None:
        self.progress_file = progress_file

    def create_reader(self, context):
        return _ProgressReader(self.progress_file)


class _ProgressReader:
    def __init__(self, progress_file: str) -> None:
        self._file = progress_file
        self._next = 0

    def poll_batch(self, max_records):
        if self._next >= SOURCE_RECORDS:
            return None
        stop = min(SOURCE_RECORDS, self._next + min(max_records, 500))
        batch = list(range(self._next, stop))
        self._next = stop
        # Replaced whole, never truncated in place: the sink's process reads it any time.
        partial = f"{self._file}.partial"
        with open(partial, "w") as out:
            out.write(str(stop))
        os.replace(partial, self._file)
        return batch

    def close(self):
        """Nothing to release."""


class SlowSink(SinkFunction):
    def __init__(self, progress_file: str, report_file: str) -> None:
        self.progress_file = progress_file
        self.report_file = report_file

    def open(self, runtime_context):
        self.seen = 0

    def invoke(self, value, context):
        self.seen += 1
        time.sleep(0.0005)  # the workload: a slow external system
        if self.seen == CHECK_AFTER:
            with open(self.progress_file) as progress:
                produced = int(progress.read())
            with open(self.report_file, "w") as out:
                json.dump({"consumed": self.seen, "produced": produced}, out)
            msg = "seen enough"  # end the test job here
            raise RuntimeError(msg)


def test_slow_sink_throttles_the_source_and_in_flight_data_stays_bounded(cluster, tmp_path):
    progress, report = str(tmp_path / "progress"), str(tmp_path / "report.json")
    conf = Configuration()
    conf.set_string("taskmanager.memory.segment-size", "1kb")
    env = StreamExecutionEnvironment.get_execution_environment(conf)
    env.set_parallelism(1)
    source = env.from_source(ProgressSource(progress), WatermarkStrategy.no_watermarks(), "ints")
    # A separate slot sharing group puts the sink in another TaskManager: data crosses TCP.
    source.rebalance().add_sink(SlowSink(progress, report)).slot_sharing_group("sink")
    with pytest.raises(Exception, match="seen enough"):
        env.execute("back-pressure")
    stats = json.loads((tmp_path / "report.json").read_text())
    in_flight = stats["produced"] - stats["consumed"]
    # ~200 int records per 1 KiB buffer; at most 10 queued buffers per subpartition,
    # 2 exclusive + 8 floating credits on the receiver, a partial buffer and one source
    # batch on each side: a few thousand records. Without back-pressure the source would
    # have produced all 2,000,000 by now.
    assert in_flight < 20_000, stats
