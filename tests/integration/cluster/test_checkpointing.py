"""Checkpoints and failover on the MiniCluster: a keyed running sum whose map fails once
recovers from its latest checkpoint, and every record affects state exactly once."""

from __future__ import annotations

import contextlib
import os
import time
from collections import defaultdict
from pathlib import Path

import pytest

from weir.common import Configuration, Types, WatermarkStrategy
from weir.core.checkpoint import decode_metadata
from weir.datastream import (
    CheckpointingMode,
    ExternalizedCheckpointRetention,
    MapFunction,
    StreamExecutionEnvironment,
)
from weir.datastream.connectors import FileSink, OutputFileConfig
from weir.datastream.connectors.file_system import BucketAssigner, Encoder
from weir.datastream.connectors.number_seq import NumberSequenceSource

pytestmark = pytest.mark.spark

RECORDS = 100_000
KEYS = 4


class FailOnceAfterACheckpoint(MapFunction):
    """Keys records; in the first attempt only (no marker file yet), raises on the first
    record after a checkpoint completed. Records the checkpoint ids it was
    notified of, per attempt, so the test can check they keep increasing."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.armed = False
        self.first_attempt = False
        self.notified: list[int] = []

    def open(self, runtime_context) -> None:
        self.attempt = runtime_context.get_attempt_number()
        self.subtask = runtime_context.get_index_of_this_subtask()
        self.first_attempt = not os.path.exists(os.path.join(self.directory, "failed"))

    def map(self, value):
        if self.first_attempt and self.armed:
            # Both subtasks may get here; whichever is second finds the marker made.
            with (
                contextlib.suppress(FileExistsError),
                open(os.path.join(self.directory, "failed"), "x"),
            ):
                pass
            msg = f"injected failure at {value}"
            raise RuntimeError(msg)
        if not self.notified:
            # Slows each attempt until it has seen a checkpoint complete, so that every
            # attempt takes part in one; the failure waits for that event, not for time.
            time.sleep(0.0002)
        return (value % KEYS, value + 1)  # positive: running sums strictly increase

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        self.notified.append(checkpoint_id)
        path = os.path.join(self.directory, f"notified-{self.attempt}-{self.subtask}")
        with open(path, "a") as f:
            f.write(f"{checkpoint_id}\n")
        if self.first_attempt and not os.path.exists(os.path.join(self.directory, "failed")):
            self.armed = True


def _running_sum_job(tmp_path: Path, config: dict[str, str], mode=CheckpointingMode.EXACTLY_ONCE):
    out = tmp_path / "out"
    marks = tmp_path / "marks"
    marks.mkdir()
    configuration = Configuration()
    for key, value in config.items():
        configuration.set_string(key, value)
    env = StreamExecutionEnvironment.get_execution_environment(configuration)
    env.set_parallelism(2)
    env.enable_checkpointing(200, mode)
    checkpoints = env.get_checkpoint_config()
    checkpoints.set_checkpoint_storage_dir(f"file://{tmp_path / 'checkpoints'}")
    checkpoints.set_externalized_checkpoint_retention(
        ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION
    )
    sink = (
        FileSink.for_row_format(f"file://{out}", Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .with_output_file_config(
            OutputFileConfig.builder().with_part_prefix("sums").with_part_suffix(".txt").build()
        )
        .build()
    )
    (
        env.from_source(
            NumberSequenceSource(0, RECORDS - 1), WatermarkStrategy.no_watermarks(), "numbers"
        )
        .map(FailOnceAfterACheckpoint(str(marks)))
        .key_by(lambda kv: kv[0])
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
        .map(lambda kv: f"{kv[0]},{kv[1]}", output_type=Types.STRING())
        .sink_to(sink)
    )
    return env, out, marks


def _committed(out: Path) -> dict[int, list[int]]:
    sums: dict[int, list[int]] = defaultdict(list)
    for path in out.rglob("*"):
        if path.is_file() and not path.name.startswith("."):
            for line in path.read_text().splitlines():
                key, total = line.split(",")
                sums[int(key)].append(int(total))
    return sums


def _expected() -> dict[int, tuple[int, int]]:
    """Per key: (records, final sum) of a failure-free run."""
    return {
        k: (len(range(k, RECORDS, KEYS)), sum(range(k + 1, RECORDS + 1, KEYS))) for k in range(KEYS)
    }


@pytest.mark.parametrize("unaligned", [False, True], ids=["aligned", "unaligned"])
def test_keyed_running_sum_recovers_exactly_once(cluster, tmp_path, unaligned):
    config = {
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": "3",
        "restart-strategy.fixed-delay.delay": "100 ms",
        "execution.checkpointing.num-retained": "2",
        "execution.checkpointing.unaligned.enabled": str(unaligned).lower(),
    }
    env, out, marks = _running_sum_job(tmp_path, config)
    result = env.execute("running sum with one failure")

    assert (marks / "failed").exists(), "the injected failure never happened"
    sums = _committed(out)
    for key, (count, total) in _expected().items():
        values = sums[key]
        # Every record affected the state once: as many running sums as records, each
        # one larger than the last, ending at the failure-free total.
        assert len(values) == count, (key, len(values), count)
        assert sorted(values) == sorted(set(values))
        assert max(values) == total

    job_dir = tmp_path / "checkpoints" / str(result.get_job_id())
    retained = sorted(p for p in job_dir.iterdir() if p.name.startswith("chk-"))
    assert 1 <= len(retained) <= 2
    assert {p.name for p in job_dir.iterdir()} >= {"shared", "taskowned"}
    for chk in retained:
        metadata = decode_metadata((chk / "_metadata").read_bytes())
        assert chk.name == f"chk-{metadata.checkpoint_id}"
        assert metadata.job_id == result.get_job_id()

    by_attempt: dict[int, list[int]] = defaultdict(list)
    for path in marks.glob("notified-*"):
        attempt = int(path.name.split("-")[1])
        by_attempt[attempt] += [int(n) for n in path.read_text().split()]
    assert set(by_attempt) == {0, 1}
    assert min(by_attempt[1]) > max(by_attempt[0])


def test_at_least_once_loses_nothing(cluster, tmp_path):
    config = {
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": "3",
        "restart-strategy.fixed-delay.delay": "100 ms",
    }
    env, out, marks = _running_sum_job(tmp_path, config, CheckpointingMode.AT_LEAST_ONCE)
    env.execute("at-least-once running sum with one failure")

    assert (marks / "failed").exists()
    sums = _committed(out)
    for key, (count, total) in _expected().items():
        # Records between the last checkpoint and the failure may count twice under
        # at-least-once; what is guaranteed is that none is lost.
        assert len(sums[key]) >= count
        assert max(sums[key]) >= total


def test_without_restart_strategy_the_job_fails(cluster, tmp_path):
    env, _, marks = _running_sum_job(tmp_path, {"restart-strategy.type": "none"})
    with pytest.raises(Exception, match="injected failure"):
        env.execute("running sum that fails")
    assert (marks / "failed").exists()
