"""Recovery from real faults on the MiniCluster: a TaskManager's Spark Python worker
SIGKILLed mid-job (once, and three times at random moments), and corrupt checkpoint files.
A checkpointed keyed running sum written by the exactly-once FileSink must commit exactly
the lines of a failure-free run."""

from __future__ import annotations

import errno
import logging
import os
import random
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from held_numbers import FileExists, HeldNumbers

from weir.client.dispatcher_client import DispatcherGateway
from weir.common import Configuration, Types, WatermarkStrategy
from weir.core.errors import JobExecutionError
from weir.datastream import (
    ExternalizedCheckpointRetention,
    MapFunction,
    StreamExecutionEnvironment,
)
from weir.datastream.connectors import FileSink, OutputFileConfig
from weir.datastream.connectors.file_system import BucketAssigner, Encoder, RollingPolicy
from weir.datastream.connectors.number_seq import NumberSequenceSource

pytestmark = pytest.mark.spark

logger = logging.getLogger(__name__)

KEYS = 4
RESTARTS = {
    "restart-strategy.type": "fixed-delay",
    "restart-strategy.fixed-delay.attempts": "10",
    "restart-strategy.fixed-delay.delay": "100 ms",
}


class Paced(MapFunction):
    """Keys a record, ``pause_s`` per record so the job is still running when faults hit."""

    def __init__(self, pause_s: float) -> None:
        self.pause_s = pause_s

    def map(self, value):
        time.sleep(self.pause_s)
        return (value % KEYS, value + 1)


def expected_lines(records: int) -> Counter[str]:
    """The output of a failure-free run: one running sum per record. The source runs at
    parallelism 1, so every key sees its records in sequence order and the sums are fixed."""
    lines: Counter[str] = Counter()
    sums = [0] * KEYS
    for value in range(records):
        key = value % KEYS
        sums[key] += value + 1
        lines[f"{key},{sums[key]}"] += 1
    return lines


def committed_lines(out: Path) -> Counter[str]:
    """The lines of the committed (visible) part files; in-progress and pending ones are
    hidden behind a leading dot."""
    lines: Counter[str] = Counter()
    for path in out.rglob("*"):
        if path.is_file() and not path.name.startswith("."):
            lines.update(path.read_text().splitlines())
    return lines


def checkpointed_env(
    tmp_path: Path, config: dict[str, str], interval_ms: int = 200
) -> StreamExecutionEnvironment:
    """p=2, restarts, checkpoints every ``interval_ms`` retained under ``tmp_path``."""
    configuration = Configuration()
    for key, value in {**RESTARTS, **config}.items():
        configuration.set_string(key, value)
    env = StreamExecutionEnvironment.get_execution_environment(configuration)
    env.set_parallelism(2)
    env.enable_checkpointing(interval_ms)
    checkpoints = env.get_checkpoint_config()
    checkpoints.set_checkpoint_storage_dir(f"file://{tmp_path / 'checkpoints'}")
    checkpoints.set_externalized_checkpoint_retention(
        ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION
    )
    return env


def exactly_once_lines(out: Path) -> FileSink:
    """An exactly-once FileSink of text lines into part files ``sums-*.txt`` in ``out``.
    A part file rolls, and so is committed, only when its subtask's input ends (the
    default policy's one-minute rollover would commit output mid-job on a slow machine,
    and tests ask whether output was committed before a subtask finished)."""
    hour_ms = 3_600_000
    return (
        FileSink.for_row_format(f"file://{out}", Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .with_rolling_policy(RollingPolicy.default_rolling_policy(1 << 30, hour_ms, hour_ms))
        .with_output_file_config(
            OutputFileConfig.builder().with_part_prefix("sums").with_part_suffix(".txt").build()
        )
        .build()
    )


def running_sum_job(
    tmp_path: Path, records: int, pause_s: float, config: dict[str, str], interval_ms: int = 200
) -> tuple[StreamExecutionEnvironment, Path]:
    out = tmp_path / "out"
    env = checkpointed_env(tmp_path, config, interval_ms)
    (
        env.from_source(
            NumberSequenceSource(0, records - 1), WatermarkStrategy.no_watermarks(), "numbers"
        )
        .set_parallelism(1)
        .map(Paced(pause_s))
        .set_parallelism(1)
        .key_by(lambda kv: kv[0])
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
        .map(lambda kv: f"{kv[0]},{kv[1]}", output_type=Types.STRING())
        .sink_to(exactly_once_lines(out))
    )
    return env, out


def await_condition(condition, what: str, timeout: float = 60.0, every: float = 0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def latest_checkpoint_id(tmp_path: Path) -> int:
    return max((int(p.name[4:]) for p in tmp_path.glob("checkpoints/*/chk-*")), default=0)


def all_running(gateway: DispatcherGateway, job_id: str, min_attempt: int = 0):
    """The job's tasks when the job is RUNNING and all its tasks of attempt
    ``min_attempt`` or later are RUNNING; else None."""
    details = gateway.job_details(job_id)
    if details.status in ("FINISHED", "FAILED", "CANCELED"):
        msg = f"job {job_id} is {details.status} already: {details.failure_cause}"
        raise AssertionError(msg)
    if details.status != "RUNNING" or not details.tasks:
        return None
    if all(t.state == "RUNNING" and t.attempt_number >= min_attempt for t in details.tasks):
        return details.tasks
    return None


def kill_a_task_manager(
    gateway: DispatcherGateway, job_id: str, rng: random.Random, attempt: int
) -> tuple[float, int]:
    """SIGKILLs the Spark Python worker of a TaskManager running the job's tasks (attempt
    ``attempt``); then measures the seconds until every task of a later attempt RUNS.
    Returns (seconds, the new attempt number)."""
    tasks = await_condition(lambda: all_running(gateway, job_id, attempt), "the job to run")
    resource_ids = sorted({t.resource_id for t in tasks})
    victim_id = rng.choice(resource_ids)
    (victim,) = [tm for tm in gateway.list_task_managers() if tm.resource_id == victim_id]
    killed_at = time.monotonic()
    os.kill(victim.pid, signal.SIGKILL)
    logger.info("killed TaskManager %s (pid %d)", victim_id, victim.pid)
    tasks = await_condition(
        lambda: all_running(gateway, job_id, attempt + 1), "the job to run again", every=0.02
    )
    return time.monotonic() - killed_at, min(t.attempt_number for t in tasks)


def test_job_recovers_from_a_killed_task_manager_exactly_once(cluster, tmp_path, record_property):
    records = 6_000
    env, out = running_sum_job(tmp_path, records, 0.001, {})
    client = env.execute_async("running sum, one TaskManager killed")
    job_id = str(client.get_job_id())
    with DispatcherGateway(cluster.address) as gateway:
        # Mid-job: after a checkpoint committed output, so there is state to restore.
        await_condition(lambda: list(tmp_path.glob("checkpoints/*/chk-*")), "a checkpoint")
        seconds, _ = kill_a_task_manager(gateway, job_id, random.Random(0), 0)
    result = client.get_job_execution_result().result()
    print(f"recovery from a TaskManager kill to RUNNING: {seconds:.2f} s")
    record_property("recovery_seconds", round(seconds, 2))

    assert result.get_job_id() == job_id
    assert committed_lines(out) == expected_lines(records)


@pytest.mark.long  # about a minute: three recoveries and a 20 s job
def test_chaos_three_task_manager_kills_exactly_once(cluster, tmp_path):
    seed = int(os.environ.get("WEIR_CHAOS_SEED", time.time_ns() % 2**32))
    print(f"chaos seed: {seed} (WEIR_CHAOS_SEED={seed} replays it)")
    rng = random.Random(seed)
    records = 20_000
    env, out = running_sum_job(tmp_path, records, 0.001, {})
    client = env.execute_async("running sum, three TaskManagers killed")
    job_id = str(client.get_job_id())
    # Committed part files appear only when they roll (at the end here), so the random
    # moments are counted in completed checkpoints: each kill comes 1 to 6 checkpoints
    # after the previous one, so every attempt takes part in at least one.
    recoveries = []
    with DispatcherGateway(cluster.address) as gateway:
        attempt = 0
        for _ in range(3):
            target = latest_checkpoint_id(tmp_path) + rng.randint(1, 6)
            await_condition(
                lambda t=target: latest_checkpoint_id(tmp_path) >= t,
                f"checkpoint {target}",
                timeout=120,
            )
            seconds, attempt = kill_a_task_manager(gateway, job_id, rng, attempt)
            recoveries.append(round(seconds, 2))
    client.get_job_execution_result().result()
    print(f"chaos recoveries (s): {recoveries}")
    assert committed_lines(out) == expected_lines(records)


def _flip_a_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


class CorruptAndFail(MapFunction):
    """Keys records. In the first attempt (until the file ``failed`` in ``marks`` exists),
    once notified of checkpoint ``after`` or a later one, flips a byte in the state files
    of the latest ``corrupt`` completed checkpoints and fails.

    No newer checkpoint can complete before that failure: every checkpoint needs this
    task's snapshot, and the task takes none while it is in the notification. A trigger
    that overtook the notification (this task snapshotted a newer checkpoint already) makes
    it wait for the next notification instead."""

    def __init__(self, checkpoints: str, marks: str, after: int, corrupt: int) -> None:
        self.checkpoints = checkpoints
        self.marks = marks
        self.after = after
        self.corrupt = corrupt
        self.snapshotted = 0

    def snapshot_state(self, checkpoint_id: int) -> bytes:
        self.snapshotted = checkpoint_id
        return b""

    def initialize_state(self, state: bytes | None) -> None:
        pass

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        marker = os.path.join(self.marks, "failed")
        if checkpoint_id < self.after or self.snapshotted > checkpoint_id:
            return
        if os.path.exists(marker):
            return
        completed = sorted(
            (
                chk
                for chk in Path(self.checkpoints).glob("*/chk-*")
                if int(chk.name[4:]) <= checkpoint_id and (chk / "_metadata").is_file()
            ),
            key=lambda p: int(p.name[4:]),
        )
        corrupted = []
        for chk in completed[-self.corrupt :]:
            for state in sorted(chk.iterdir()):
                if state.name != "_metadata" and state.is_file():
                    _flip_a_byte(state)
                    corrupted.append(str(state))
        with open(marker, "x") as f:
            f.write("\n".join(corrupted))
        msg = f"injected failure after checkpoint {checkpoint_id}: {len(corrupted)} files corrupt"
        raise RuntimeError(msg)

    def map(self, value):
        return (value % KEYS, value + 1)


def _build_corrupting(tmp_path: Path, records: int, corrupt: int, config: dict[str, str]):
    """The running sum, its source held halfway until the corrupting map failed (so the job
    is still running when checkpoint 2 completes, however slow the machine)."""
    marks = tmp_path / "marks"
    marks.mkdir()
    out = tmp_path / "out"
    checkpoints = tmp_path / "checkpoints"
    configuration = Configuration()
    settings = {
        **RESTARTS,
        "execution.checkpointing.num-retained": "2",
        # A pause between checkpoints, so that a notification usually reaches the task
        # before the next trigger does (when it does not, the map waits for the next one).
        "execution.checkpointing.min-pause": "500 ms",
        # Every piece of state in a file of its own, for the map to corrupt (small state
        # is otherwise inline in _metadata).
        "execution.checkpointing.data-inline-threshold": "0",
        **config,
    }
    for key, value in settings.items():
        configuration.set_string(key, value)
    env = StreamExecutionEnvironment.get_execution_environment(configuration)
    env.set_parallelism(2)
    env.enable_checkpointing(100)
    env.get_checkpoint_config().set_checkpoint_storage_dir(f"file://{checkpoints}")
    sink = (
        FileSink.for_row_format(f"file://{out}", Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .build()
    )
    source = HeldNumbers(0, records - 1, {records // 2: FileExists(marks / "failed")})
    (
        env.from_source(source, WatermarkStrategy.no_watermarks(), "numbers")
        .set_parallelism(1)
        .map(CorruptAndFail(str(checkpoints), str(marks), after=2, corrupt=corrupt))
        .set_parallelism(1)
        .key_by(lambda kv: kv[0])
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
        .map(lambda kv: f"{kv[0]},{kv[1]}", output_type=Types.STRING())
        .sink_to(sink)
    )
    return env, out, marks


def test_a_corrupt_latest_checkpoint_falls_back_to_the_previous_one(cluster, tmp_path, caplog):
    records = 8_000
    env, out, marks = _build_corrupting(tmp_path, records, corrupt=1, config={})
    with caplog.at_level(logging.WARNING, logger="weir.jobmanager.checkpoint"):
        env.execute("running sum, latest checkpoint corrupt")

    corrupted = (marks / "failed").read_text().split()
    assert corrupted, "the injected corruption never happened"
    fallbacks = [r.getMessage() for r in caplog.records if "cannot be restored" in r.getMessage()]
    assert len(fallbacks) == 1, fallbacks
    assert any(path in fallbacks[0] for path in corrupted), fallbacks
    assert committed_lines(out) == expected_lines(records)


def test_with_every_retained_checkpoint_corrupt_the_job_fails_naming_the_file(cluster, tmp_path):
    env, _, marks = _build_corrupting(tmp_path, 8_000, corrupt=2, config={})
    with pytest.raises(JobExecutionError) as info:
        env.execute("running sum, every checkpoint corrupt")

    corrupted = (marks / "failed").read_text().split()
    assert len(corrupted) >= 2
    assert "none of its 2 retained checkpoints can be restored" in info.value.cause
    assert any(path in info.value.cause for path in corrupted), info.value.cause


@pytest.fixture
def small_file_system(tmp_path) -> Iterator[Path]:
    """A directory on a tmpfs of its own, small enough to fill at once (mounting needs
    root; the test is skipped without)."""
    mount = tmp_path / "small"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "--lazy", str(mount)], check=True)


def _fill(directory: Path) -> Path:
    """Writes a file into ``directory`` until its file system is full."""
    filler = directory / "filler"
    # Unbuffered: a write the file system takes only in part would otherwise leave bytes in
    # the buffer, and closing the file would raise ENOSPC again.
    with open(filler, "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * (1 << 16))
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
    return filler


def test_a_full_checkpoint_directory_leaves_no_hidden_files(cluster, tmp_path, small_file_system):
    """Checkpoints fail while the checkpoint directory is full, and each failure restores
    the last completed checkpoint in a new run, after the FileSink had rolled files for
    the failed one. Once there is room again the job ends, its output exactly once and
    no in-progress or pending file left behind."""
    records = 6_000
    out = tmp_path / "out"
    configuration = Configuration()
    for key, value in {**RESTARTS, "restart-strategy.fixed-delay.attempts": "50"}.items():
        configuration.set_string(key, value)
    env = StreamExecutionEnvironment.get_execution_environment(configuration)
    env.set_parallelism(2)
    env.enable_checkpointing(100)
    env.get_checkpoint_config().set_checkpoint_storage_dir(f"file://{small_file_system}")
    sink = (
        FileSink.for_row_format(f"file://{out}", Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .with_rolling_policy(RollingPolicy.on_checkpoint_rolling_policy())
        .build()
    )
    (
        env.from_source(
            NumberSequenceSource(0, records - 1), WatermarkStrategy.no_watermarks(), "numbers"
        )
        .set_parallelism(1)
        .map(Paced(0.001))
        .set_parallelism(1)
        .key_by(lambda kv: kv[0])
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
        .map(lambda kv: f"{kv[0]},{kv[1]}", output_type=Types.STRING())
        .sink_to(sink)
    )
    client = env.execute_async("running sum, checkpoint directory full for a while")
    job_id = str(client.get_job_id())
    with DispatcherGateway(cluster.address) as gateway:
        await_condition(
            lambda: gateway.checkpoint_statistics(job_id).num_completed >= 1, "a checkpoint"
        )
        filler = _fill(small_file_system)
        stats = await_condition(
            lambda: (s := gateway.checkpoint_statistics(job_id)).num_restored >= 3 and s,
            "three restores while the directory is full",
        )
        filler.unlink()
    client.get_job_execution_result().result()

    assert stats.num_failed >= 3
    assert committed_lines(out) == expected_lines(records)
    assert sorted(p.name for p in out.rglob(".*")) == []
