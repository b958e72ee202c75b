"""A checkpointed job that fails for good once one of its checkpoints is complete: from
record ``--fail-at`` on, every 50th record looks for a checkpoint's metadata under
``--checkpoints`` (a local directory), and raises once there is one; no restarts. Its
checkpoints are kept when it fails (DELETE_ON_CANCELLATION).

    weir run tests/e2e/jobs/fails_after_a_checkpoint.py --checkpoints DIR [--fail-at N]
"""

import argparse
import glob
import os
import time

from weir.common import Configuration, Types, WatermarkStrategy
from weir.datastream import (
    ExternalizedCheckpointRetention,
    MapFunction,
    StreamExecutionEnvironment,
)
from weir.datastream.connectors.number_seq import NumberSequenceSource


class FailAfterACheckpoint(MapFunction):
    def __init__(self, checkpoints: str, fail_at: int) -> None:
        self.checkpoints = checkpoints
        self.fail_at = fail_at

    def map(self, value):
        time.sleep(0.001)  # the job's pace, not a synchronisation
        if value >= self.fail_at and value % 50 == 0:
            if glob.glob(os.path.join(self.checkpoints, "*", "chk-*", "_metadata")):
                raise RuntimeError(f"record {value}: failing on purpose after a checkpoint")
        return value


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--checkpoints", required=True)
    parser.add_argument("--fail-at", type=int, default=100)
    args = parser.parse_args()
    configuration = Configuration()
    configuration.set_string("restart-strategy.type", "none")
    env = StreamExecutionEnvironment.get_execution_environment(configuration)
    env.set_parallelism(1)
    env.enable_checkpointing(200)
    checkpoint_config = env.get_checkpoint_config()
    checkpoint_config.set_checkpoint_storage_dir(f"file://{args.checkpoints}")
    checkpoint_config.set_externalized_checkpoint_retention(
        ExternalizedCheckpointRetention.DELETE_ON_CANCELLATION
    )
    (
        env.from_source(
            NumberSequenceSource(0, 1_000_000), WatermarkStrategy.no_watermarks(), "numbers"
        )
        .map(FailAfterACheckpoint(args.checkpoints, args.fail_at), output_type=Types.LONG())
        .print()
    )
    env.execute("fails_after_a_checkpoint")
