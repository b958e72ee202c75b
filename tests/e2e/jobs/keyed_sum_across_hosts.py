"""A checkpointed keyed running sum at the parallelism `weir run -p` gives, written by the
exactly-once FileSink; the source side runs at 1, so the keyed exchange fans out to every
TaskManager. Each keyed subtask prints one line per key it sees first.

    weir run -d -p 4 tests/e2e/jobs/keyed_sum_across_hosts.py --output DIR --checkpoints DIR
"""

import argparse
import time

from across_hosts_helpers import key_of

from weir.common import Configuration, Types, WatermarkStrategy
from weir.datastream import MapFunction, StreamExecutionEnvironment
from weir.datastream.connectors import FileSink
from weir.datastream.connectors.file_system import BucketAssigner, Encoder
from weir.datastream.connectors.number_seq import NumberSequenceSource

PRINT_MARK = "weir-across-hosts-print"


class Paced(MapFunction):
    def map(self, value):
        time.sleep(0.001)  # the job's pace, so it runs while a TaskManager is killed
        return (key_of(value), value + 1)


class PrintFirstOfEachKey(MapFunction):
    def __init__(self):
        self.seen = set()

    def map(self, value):
        if value[0] not in self.seen:
            self.seen.add(value[0])
            print(f"{PRINT_MARK} key {value[0]}", flush=True)
        return f"{value[0]},{value[1]}"


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--output", required=True)
    parser.add_argument("--checkpoints", required=True)
    parser.add_argument("--records", type=int, default=6_000)
    args = parser.parse_args()
    configuration = Configuration()
    configuration.set_string("restart-strategy.type", "fixed-delay")
    configuration.set_string("restart-strategy.fixed-delay.attempts", "10")
    configuration.set_string("restart-strategy.fixed-delay.delay", "100 ms")
    env = StreamExecutionEnvironment.get_execution_environment(configuration)
    env.enable_checkpointing(300)
    env.get_checkpoint_config().set_checkpoint_storage_dir(f"file://{args.checkpoints}")
    sink = (
        FileSink.for_row_format(f"file://{args.output}", Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .build()
    )
    (
        env.from_source(
            NumberSequenceSource(0, args.records - 1), WatermarkStrategy.no_watermarks(), "numbers"
        )
        .set_parallelism(1)
        .map(Paced())
        .set_parallelism(1)
        .key_by(lambda kv: kv[0])
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
        .map(PrintFirstOfEachKey(), output_type=Types.STRING())
        .sink_to(sink)
    )
    env.execute("keyed_sum_across_hosts")
