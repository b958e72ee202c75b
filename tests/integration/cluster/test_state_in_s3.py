"""Checkpoints, savepoints, FileSink output and FileSource input on S3 (a real MinIO server,
tests/minio_server.py), jobs on the MiniCluster:

- incremental RocksDB checkpoints carry a job through a TaskManager kill exactly once,
  upload each shared file once, and leave in ``shared/`` only what the retained
  checkpoint refers to, and no unfinished upload;
- the exactly-once FileSink writes part files as multipart uploads: killed at moments a
  seed picks, the job commits exactly the lines of a failure-free run, with no partial
  object ever visible and no upload or put-aside object left once it ended
  (``make test-long`` runs more kills with random seeds);
- a savepoint written to S3 is read back and resumed from ``s3://`` at another parallelism;
- a FileSource monitoring an ``s3://`` prefix reads what is written there while it runs;
- refused credentials and a bucket without write permission fail the job at once, naming
  the bucket and key; credentials appear in no log;
- the S3 server stopped for 20 s mid-job (``-m long``), the job running and checkpointing
  all through it: it rides through or restarts from its latest checkpoint, checkpoints
  again afterwards, and its output is still exactly once.
"""

from __future__ import annotations

import os
import random
import signal
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from minio_server import ROOT_PASSWORD, MinioServer, S3Endpoint
from test_checkpoint_recovery import (
    RESTARTS,
    Paced,
    await_condition,
    expected_lines,
    kill_a_task_manager,
)

from weir.client.dispatcher_client import DispatcherGateway
from weir.common import Configuration, Duration, Types, WatermarkStrategy
from weir.core.checkpoint import decode_metadata
from weir.core.errors import JobExecutionError, JobSubmissionError
from weir.datastream import (
    ExternalizedCheckpointRetention,
    KeyedProcessFunction,
    MapFunction,
    StreamExecutionEnvironment,
)
from weir.datastream.connectors import FileSink, FileSource, OutputFileConfig, StreamFormat
from weir.datastream.connectors.file_system import BucketAssigner, Encoder, RollingPolicy
from weir.datastream.connectors.number_seq import NumberSequenceSource
from weir.datastream.state import ValueStateDescriptor

pytestmark = pytest.mark.spark

DEADLINE_S = 240
# Lines of the FileSink test are padded to this many bytes, so that part files span
# several 5 MiB parts of their multipart uploads.
PADDED_LINE = 1024


@pytest.fixture
def bucket(minio: S3Endpoint) -> str:
    return minio.new_bucket("state")


def committed(fs: Any, prefix: str) -> Counter[str]:
    """The lines of the visible objects under ``prefix`` (``bucket/path``)."""
    lines: Counter[str] = Counter()
    for path in fs.find(prefix):
        if not path.rsplit("/", 1)[-1].startswith("."):
            lines.update(fs.cat_file(path).decode().splitlines())
    return lines


def uploaded(fs: Any, prefix: str) -> dict[str, tuple[str, Any]]:
    """The objects under ``prefix``, each with its ETag and time of upload (one listing)."""
    found = fs.find(prefix, detail=True)
    return {
        path: (info["ETag"], info["LastModified"])
        for path, info in found.items()
        if info["type"] == "file"
    }


def hidden(fs: Any, prefix: str) -> list[str]:
    """The hidden objects under ``prefix``: put-aside bytes, markers of uploads."""
    return [p for p in fs.find(prefix) if p.rsplit("/", 1)[-1].startswith(".")]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[MinioServer]:
    """A MinIO server of the test's own, whose unfinished uploads it can count."""
    with MinioServer(tmp_path / "minio") as own:
        yield own


def s3_env(
    minio: S3Endpoint, checkpoints: str, config: dict[str, str]
) -> StreamExecutionEnvironment:
    configuration = Configuration()
    for key, value in {**RESTARTS, **minio.config(), **config}.items():
        configuration.set_string(key, value)
    env = StreamExecutionEnvironment.get_execution_environment(configuration)
    env.set_parallelism(2)
    env.enable_checkpointing(200)
    checkpoint_config = env.get_checkpoint_config()
    checkpoint_config.set_checkpoint_storage_dir(checkpoints)
    checkpoint_config.set_externalized_checkpoint_retention(
        ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION
    )
    return env


class RunningTotal(KeyedProcessFunction):
    """The running sum per key, with its state named for the savepoint reader."""

    def open(self, runtime_context):
        self.total = runtime_context.get_state(ValueStateDescriptor("total", Types.LONG()))

    def process_element(self, value, ctx):
        total = (self.total.value() or 0) + value[1]
        self.total.update(total)
        yield f"{value[0]},{total}"


class SlowUntil(MapFunction):
    """``Paced``, but from record ``slow_from`` on 50 ms a record until the file ``go``
    exists: the job goes on checkpointing, and cannot finish, until the test says so."""

    def __init__(self, go: str, slow_from: int, pause_s: float) -> None:
        self.go = go
        self.slow_from = slow_from
        self.pause_s = pause_s

    def map(self, value):
        slow = value >= self.slow_from and not os.path.exists(self.go)
        time.sleep(0.05 if slow else self.pause_s)  # the job's pace, not a synchronisation
        return Paced(0).map(value)


def running_sum(
    minio: S3Endpoint,
    base: str,
    records: int,
    config: dict[str, str],
    pause_s: float = 0.001,
    pace: MapFunction | None = None,
) -> StreamExecutionEnvironment:
    env = s3_env(minio, f"{base}/checkpoints", config)
    sink = (
        FileSink.for_row_format(f"{base}/out", Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .build()
    )
    (
        env.from_source(
            NumberSequenceSource(0, records - 1), WatermarkStrategy.no_watermarks(), "numbers"
        )
        .set_parallelism(1)
        .map(pace or Paced(pause_s))
        .set_parallelism(1)
        .key_by(lambda kv: kv[0])
        .process(RunningTotal(), output_type=Types.STRING())
        .uid("sum")
        .sink_to(sink)
        .uid("files")
    )
    return env


def test_incremental_checkpoints_on_s3_survive_a_kill_upload_shared_files_once_and_leave_nothing(
    cluster, server, mini_cluster, caplog
) -> None:
    minio = server
    bucket = server.new_bucket("incremental")
    records = 6_000
    config = {
        "state.backend.type": "rocksdb",
        "state.backend.incremental": "true",
        "execution.checkpointing.num-retained": "1",
    }
    base = f"s3://{bucket}/job"
    client = running_sum(minio, base, records, config).execute_async("running sum on S3")
    job_id = str(client.get_job_id())
    fs = minio.file_system()
    shared = f"{bucket}/job/checkpoints/{job_id}/shared"
    with DispatcherGateway(cluster.address) as gateway:
        first = await_condition(lambda: uploaded(fs, shared), "SST files on S3", 120)
        kill_a_task_manager(gateway, job_id, random.Random(3), 0)
    client.get_job_execution_result().result()

    assert committed(fs, f"{bucket}/job/out") == expected_lines(records)
    (metadata,) = fs.glob(f"{bucket}/job/checkpoints/{job_id}/chk-*/_metadata")
    referenced = decode_metadata(fs.cat_file(metadata)).shared_paths()
    assert referenced and all(
        p.startswith(f"{base}/checkpoints/{job_id}/shared/") for p in referenced
    )
    # Only what the one retained checkpoint refers to is left in shared/, ...
    remaining = uploaded(fs, shared)
    assert {p.rsplit("/", 1)[-1] for p in remaining} == {p.rsplit("/", 1)[-1] for p in referenced}
    # ... a file that stayed in use was never uploaded again, ...
    for path in set(remaining) & set(first):
        assert remaining[path] == first[path]
    # ... and neither a checkpoint that never completed nor an upload cut short is left.
    assert [p for p in fs.ls(f"{bucket}/job/checkpoints/{job_id}") if "chk-" in p] == [
        metadata.rsplit("/", 1)[0]
    ]
    assert hidden(fs, f"{bucket}/job") == []
    assert server.unfinished_uploads() == []

    # The credentials are in no log: the master's (this process) and the TaskManagers'.
    assert ROOT_PASSWORD not in caplog.text
    logs = Path(mini_cluster.config["env.log.dir"])
    for log in (p for p in logs.rglob("*") if p.is_file()):
        assert ROOT_PASSWORD not in log.read_text(errors="replace"), log


class Padded(MapFunction):
    """A line of ``PADDED_LINE`` bytes per record, ``pause_s`` per record."""

    def __init__(self, pause_s: float) -> None:
        self.pause_s = pause_s

    def map(self, value):
        time.sleep(self.pause_s)
        head = f"{value:08d} "
        return head + "x" * (PADDED_LINE - len(head) - 1)


def expected_padded(records: int) -> Counter[str]:
    return Counter(Padded(0).map(value) for value in range(records))


class KillAt(MapFunction):
    """Passes records on; in subtask 0, SIGKILLs its own TaskManager's process when its
    attempt has seen ``points[n]`` records, ``n`` the number of kills so far (marked in
    ``marks``): faults at places in the data, whatever the machine's speed, while parts
    upload beside the task, between checkpoints or before the first."""

    def __init__(self, marks: str, points: list[int]) -> None:
        self.marks = marks
        self.points = points

    def open(self, runtime_context):
        kills = len(os.listdir(self.marks))
        armed = runtime_context.get_index_of_this_subtask() == 0 and kills < len(self.points)
        self.threshold = self.points[kills] if armed else -1
        self.seen = 0

    def map(self, value):
        self.seen += 1
        if self.seen == self.threshold:
            with open(os.path.join(self.marks, str(len(os.listdir(self.marks)))), "x"):
                pass
            os.kill(os.getpid(), signal.SIGKILL)
        return value


def padded_lines_job(
    minio: S3Endpoint, base: str, records: int, marks: str, points: list[int]
) -> StreamExecutionEnvironment:
    """Records of 1 KiB into a FileSink on S3 whose part files roll at 6 MiB: each spans
    parts of 5 MiB and several checkpoints, and some are pending at a checkpoint."""
    env = s3_env(minio, f"{base}/checkpoints", {})
    sink = (
        FileSink.for_row_format(f"{base}/out", Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .with_output_file_config(OutputFileConfig.builder().with_part_prefix("lines").build())
        .with_rolling_policy(
            RollingPolicy.default_rolling_policy(
                part_size=6 << 20, rollover_interval=10 * 60_000, inactivity_interval=10 * 60_000
            )
        )
        .build()
    )
    (
        env.from_source(
            NumberSequenceSource(0, records - 1), WatermarkStrategy.no_watermarks(), "numbers"
        )
        .set_parallelism(1)
        .map(Padded(0), output_type=Types.STRING())
        .set_parallelism(1)
        .rebalance()
        .map(KillAt(marks, points), output_type=Types.STRING())
        .sink_to(sink)
    )
    return env


def _completed_checkpoints(gateway: DispatcherGateway, job_id: str) -> int:
    return int(gateway.checkpoint_statistics(job_id).num_completed)


def run_with_kills(
    minio: MinioServer, bucket: str, marks: Path, seed: int, kills: int, records: int
) -> None:
    """The padded job, a sink subtask's TaskManager killed ``kills`` times at places in its
    input that ``seed`` picks; then the checks."""
    rng = random.Random(seed)
    per_subtask = records // 2
    points = [rng.randrange(1, per_subtask) for _ in range(kills)]
    marks.mkdir(parents=True)
    base = f"s3://{bucket}/seed-{seed}"
    padded_lines_job(minio, base, records, str(marks), points).execute(f"S3 sink, seed {seed}")
    assert len(os.listdir(marks)) >= 1, f"no kill happened at {points}"
    fs = minio.file_system()
    assert committed(fs, f"{bucket}/seed-{seed}/out") == expected_padded(records)
    assert hidden(fs, f"{bucket}/seed-{seed}/out") == []
    assert minio.unfinished_uploads() == []


# One seed in make test; the other, and random ones, in make test-long.
@pytest.mark.parametrize("seed", [12, pytest.param(11, marks=pytest.mark.long)])
def test_a_file_sink_on_s3_killed_at_seeded_places_commits_exactly_once(
    cluster, server, tmp_path, seed
) -> None:
    bucket = server.new_bucket("sink")
    run_with_kills(server, bucket, tmp_path / "marks", seed, kills=1, records=12_000)


@pytest.mark.long  # minutes: several kills per run, seeds of the moment
def test_a_file_sink_on_s3_killed_at_random_places_commits_exactly_once(
    cluster, server, tmp_path
) -> None:
    seed = int(os.environ.get("WEIR_CHAOS_SEED", time.time_ns() % 2**32))
    print(f"chaos seed: {seed} (WEIR_CHAOS_SEED={seed} replays it)")
    bucket = server.new_bucket("sink")
    for run in range(4):
        marks = tmp_path / f"marks-{run}"
        run_with_kills(server, bucket, marks, seed + run, kills=3, records=32_000)


def test_a_savepoint_on_s3_is_read_back_and_resumed_at_another_parallelism(
    cluster, minio, bucket
) -> None:
    from weir.state import read_savepoint

    records = 8_000
    base = f"s3://{bucket}"
    client = running_sum(minio, f"{base}/first", records, {}).execute_async("running sum")
    job_id = str(client.get_job_id())
    with DispatcherGateway(cluster.address) as gateway:
        await_condition(lambda: _completed_checkpoints(gateway, job_id) >= 1, "a checkpoint")
        path = gateway.trigger_savepoint(job_id, f"{base}/savepoints", stop=True)
        assert path.startswith(f"{base}/savepoints/savepoint-")
        assert gateway.wait_for_result(job_id, DEADLINE_S * 1000).status == "FINISHED"

    savepoint = read_savepoint(path)
    totals = dict(savepoint.keyed_state("sum", "total"))
    assert set(totals) == {0, 1, 2, 3}
    assert 0 < sum(totals.values()) < records * (records + 1) // 2

    resumed = running_sum(
        minio, f"{base}/resumed", records, {"execution.state-recovery.path": path}
    )
    resumed.set_parallelism(3)
    resumed.execute("running sum resumed from S3")
    fs = minio.file_system()
    lines = committed(fs, f"{bucket}/first/out") + committed(fs, f"{bucket}/resumed/out")
    assert lines == expected_lines(records)


def test_a_file_source_monitoring_an_s3_prefix_reads_what_is_written_while_it_runs(
    cluster, minio, bucket
) -> None:
    fs = minio.file_system()
    fs.pipe_file(f"{bucket}/in/a.txt", b"a1\na2\n")
    fs.pipe_file(f"{bucket}/in/.hidden", b"never read\n")
    env = s3_env(minio, f"s3://{bucket}/checkpoints", {})
    source = (
        FileSource.for_record_stream_format(StreamFormat.text_line_format(), f"s3://{bucket}/in")
        .monitor_continuously(Duration.of_millis(200))
        .build()
    )
    stream = env.from_source(source, WatermarkStrategy.no_watermarks(), "s3 files")
    seen: list[str] = []
    with stream.execute_and_collect("monitor an S3 prefix") as results:
        for line in results:
            seen.append(line)
            if line == "a2":
                fs.pipe_file(f"{bucket}/in/b.txt", b"b1\n")
                fs.pipe_file(f"{bucket}/in/sub/c.txt", b"c1\nc2\n")
            if len(seen) == 5:
                break
    assert sorted(seen) == ["a1", "a2", "b1", "c1", "c2"]


def _one_record_to(minio: S3Endpoint, checkpoints: str, out: str, config: dict[str, str]):
    env = s3_env(minio, checkpoints, config)
    sink = FileSink.for_row_format(out, Encoder.simple_string_encoder()).build()
    env.from_collection(["a record"], type_info=Types.STRING()).sink_to(sink)
    return env


def test_refused_credentials_refuse_the_job_at_once_naming_the_bucket(
    cluster, minio, bucket, caplog
) -> None:
    wrong = {"s3.access-key": "not-a-user", "s3.secret-key": "not-its-secret"}
    env = _one_record_to(minio, f"s3://{bucket}/checkpoints", f"s3://{bucket}/out", wrong)
    with pytest.raises(JobSubmissionError) as refused:
        env.execute("wrong credentials")
    message = str(refused.value)
    assert f"bucket {bucket!r}" in message and "InvalidAccessKeyId" in message
    assert "s3.access-key" in message and "not-its-secret" not in message
    assert "not-its-secret" not in caplog.text
    # The cluster runs on: the same job with the right credentials does.
    _one_record_to(minio, f"s3://{bucket}/checkpoints", f"s3://{bucket}/out", {}).execute("right")
    assert committed(minio.file_system(), f"{bucket}/out") == Counter(["a record"])


def test_a_bucket_without_write_permission_fails_the_job_at_once_naming_bucket_and_key(
    cluster, minio, bucket, tmp_path
) -> None:
    key, secret, token = minio.read_only_credentials(bucket)
    read_only = {"s3.access-key": key, "s3.secret-key": secret, "s3.session.token": token}
    # Checkpoints there: the JobMaster's first write is refused, and so is the job.
    env = _one_record_to(minio, f"s3://{bucket}/checkpoints", f"s3://{bucket}/out", read_only)
    with pytest.raises(JobSubmissionError) as refused:
        env.execute("checkpoints in a read-only bucket")
    assert "AccessDenied" in str(refused.value) and f"s3://{bucket}/checkpoints/" in str(
        refused.value
    )
    # A FileSink there (checkpoints elsewhere): its first upload fails the job for good,
    # whatever its restart strategy allows.
    env = _one_record_to(minio, f"file://{tmp_path}/checkpoints", f"s3://{bucket}/out", read_only)
    client = env.execute_async("a sink in a read-only bucket")
    with pytest.raises(JobExecutionError) as failed:
        client.get_job_execution_result().result()
    cause = str(failed.value)
    assert "S3AccessDeniedError" in cause and f"s3://{bucket}/out/" in cause, cause
    with DispatcherGateway(cluster.address) as gateway:
        details = gateway.job_details(str(client.get_job_id()))
    assert {t.attempt_number for t in details.tasks} == {0}  # never restarted


@pytest.mark.long  # a 20 s outage, then recovery
def test_the_s3_server_stopped_for_20_s_mid_job_loses_nothing(cluster, server, tmp_path) -> None:
    bucket = server.new_bucket("outage")
    records = 20_000
    go = tmp_path / "go"
    # Restarts every second for as long as the outage lasts.
    patient = {
        "restart-strategy.fixed-delay.attempts": "1000",
        "restart-strategy.fixed-delay.delay": "1 s",
    }
    # Slow from the middle on until the outage is over: still running, and checkpointing
    # into the bucket, all through it, however fast the machine.
    pace = SlowUntil(str(go), records // 2, 0.0005)
    env = running_sum(server, f"s3://{bucket}", records, patient, pace=pace)
    client = env.execute_async("running sum through an S3 outage")
    job_id = str(client.get_job_id())
    with DispatcherGateway(cluster.address) as gateway:
        await_condition(lambda: _completed_checkpoints(gateway, job_id) >= 3, "checkpoints")
        server.stop()
        latest = gateway.checkpoint_statistics(job_id).latest_completed
        before = latest.checkpoint_id if latest else 0
        time.sleep(20)  # the outage itself, not a wait
        server.start()
        go.touch()
        client.get_job_execution_result().result()
        stats = gateway.checkpoint_statistics(job_id)
    # S3 requests retry for seconds, so a checkpoint in progress may outlast the outage
    # (the job rides through it); or the outage failed it, and the job restarted from the
    # last checkpoint before the outage. Either way it checkpointed again afterwards.
    assert before >= 3
    assert stats.num_restored == 0 or stats.latest_restored_id >= before, (before, stats)
    assert stats.latest_completed is not None
    assert stats.latest_completed.checkpoint_id > before
    fs = server.file_system()
    assert committed(fs, f"{bucket}/out") == expected_lines(records)
    assert hidden(fs, f"{bucket}/out") == []
    assert server.unfinished_uploads() == []
