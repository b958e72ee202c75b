"""An unbounded keyed running sum, checkpointed every 200 ms, paced so that it runs until
it is stopped or cancelled: the job Flink's own CLI takes savepoints of, stops and
cancels in the Flink client tests.

    weir run -d tests/e2e/jobs/checkpointed_sum.py NAME CHECKPOINT_DIR
"""

import sys
import time

from weir.common import Types, WatermarkStrategy
from weir.datastream import MapFunction, StreamExecutionEnvironment
from weir.datastream.connectors.number_seq import NumberSequenceSource


class Paced(MapFunction):
    def map(self, value):
        time.sleep(0.002)  # the job's pace, not a synchronisation
        return (value % 4, value)


if __name__ == "__main__":
    name, checkpoints = sys.argv[1], sys.argv[2]
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    env.enable_checkpointing(200)
    env.get_checkpoint_config().set_checkpoint_storage_dir(checkpoints)
    (
        env.from_source(NumberSequenceSource(0, 10**12), WatermarkStrategy.no_watermarks(), "n")
        .uid("numbers")
        .map(Paced(), output_type=Types.TUPLE([Types.LONG(), Types.LONG()]))
        .uid("paced")
        .key_by(lambda kv: kv[0])
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
        .uid("sum")
        .filter(lambda kv: False)
        .print()
    )
    env.execute(name)
