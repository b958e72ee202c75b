"""A checkpointed keyed running sum written by the exactly-once FileSink, paced so that
the chaos test can kill TaskManagers while it runs. Fixed-delay restarts.

    weir run -d tests/e2e/jobs/running_sum_to_files.py --output DIR [--checkpoints DIR]

DIR is a local directory or any URL (webhdfs://namenode:port/path).
"""

import argparse
import time

from weir.common import Configuration, Types, WatermarkStrategy
from weir.datastream import MapFunction, StreamExecutionEnvironment
from weir.datastream.connectors import FileSink
from weir.datastream.connectors.file_system import BucketAssigner, Encoder
from weir.datastream.connectors.number_seq import NumberSequenceSource

KEYS = 4


def url(place: str) -> str:
    return place if "://" in place else f"file://{place}"


class Paced(MapFunction):
    """Keys a record, a millisecond per record so the job runs for a while."""

    def map(self, value):
        time.sleep(0.001)  # the job's pace, not a synchronisation
        return (value % KEYS, value + 1)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--output", required=True)
    parser.add_argument(
        "--checkpoints", help="checkpoint directory; none: the JobMaster keeps them (jobmanager)"
    )
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--interval", type=int, default=200, help="checkpoint interval, ms")
    args = parser.parse_args()
    configuration = Configuration()
    configuration.set_string("restart-strategy.type", "fixed-delay")
    configuration.set_string("restart-strategy.fixed-delay.attempts", "10")
    configuration.set_string("restart-strategy.fixed-delay.delay", "100 ms")
    env = StreamExecutionEnvironment.get_execution_environment(configuration)
    env.set_parallelism(2)
    env.enable_checkpointing(args.interval)
    if args.checkpoints:
        env.get_checkpoint_config().set_checkpoint_storage_dir(url(args.checkpoints))
    sink = (
        FileSink.for_row_format(url(args.output), Encoder.simple_string_encoder())
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
        .map(lambda kv: f"{kv[0]},{kv[1]}", output_type=Types.STRING())
        .sink_to(sink)
    )
    env.execute("running_sum_to_files")
