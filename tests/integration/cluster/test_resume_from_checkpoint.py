"""Resuming from a retained checkpoint (``weir run -s``): a keyed running sum that was
cancelled after a checkpoint continues, in a new job, from that checkpoint's state and
source position; state of operators the job no longer has refuses the submission unless
``--allowNonRestoredState``."""

from __future__ import annotations

import re
import textwrap
import time
from collections import defaultdict
from pathlib import Path

import pytest

from weir.client import cli
from weir.client.dispatcher_client import DispatcherGateway
from weir.core.job_status import JobStatus

pytestmark = pytest.mark.spark

RECORDS = 40_000
KEYS = 4
DEADLINE_S = 120

# The same program for every run; argv: output directory, checkpoint directory, "slow" to
# throttle it (the run to cancel) or "fast", and the uid of the running sum.
JOB = textwrap.dedent(
    f"""
    import sys
    import time

    from weir.common import Configuration, Types, WatermarkStrategy
    from weir.datastream import (
        ExternalizedCheckpointRetention, MapFunction, StreamExecutionEnvironment,
    )
    from weir.datastream.connectors import FileSink
    from weir.datastream.connectors.file_system import BucketAssigner, Encoder
    from weir.datastream.connectors.number_seq import NumberSequenceSource

    out, checkpoints, speed, sum_uid = sys.argv[1:5]


    class KeyBy(MapFunction):
        def map(self, value):
            if speed == "slow":
                time.sleep(0.001)  # throttles the run the test cancels
            return (value % {KEYS}, value + 1)


    job_config = Configuration()
    # No run is meant to fail: one that does fails the test at once instead of restarting.
    job_config.set_string("restart-strategy.type", "none")
    env = StreamExecutionEnvironment.get_execution_environment(job_config)
    env.set_parallelism(2)
    env.enable_checkpointing(200)
    config = env.get_checkpoint_config()
    config.set_checkpoint_storage_dir(checkpoints)
    config.set_externalized_checkpoint_retention(
        ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION
    )
    sink = (
        FileSink.for_row_format(out, Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .build()
    )
    (
        env.from_source(
            NumberSequenceSource(0, {RECORDS} - 1), WatermarkStrategy.no_watermarks(), "numbers"
        )
        .uid("numbers")
        .map(KeyBy())
        .uid("key-by")
        .key_by(lambda kv: kv[0])
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
        .uid(sum_uid)
        .map(lambda kv: f"{{kv[0]}},{{kv[1]}}", output_type=Types.STRING())
        .uid("format")
        .sink_to(sink)
        .uid("files")
    )
    env.execute("resumable running sum")
    """
)


def _sums(*outs: Path) -> dict[int, list[int]]:
    sums: dict[int, list[int]] = defaultdict(list)
    for out in outs:
        for path in out.rglob("*"):
            if path.is_file() and not path.name.startswith("."):
                for line in path.read_text().splitlines():
                    key, total = line.split(",")
                    sums[int(key)].append(int(total))
    return sums


def _hidden(*outs: Path) -> list[Path]:
    return [path for out in outs for path in out.rglob(".*") if path.is_file()]


def _assert_exactly_once(sums: dict[int, list[int]]) -> None:
    """Every record's running sum once, continued across the restore: restarting from
    zero would end lower; replaying the whole source with the restored state would end
    higher and count records twice."""
    for key, total in _totals().items():
        values = sums[key]
        assert len(values) == len(range(key, RECORDS, KEYS)), (key, len(values))
        assert len(set(values)) == len(values)
        assert max(values) == total, (key, max(values), total)


def _totals() -> dict[int, int]:
    return {k: sum(range(k + 1, RECORDS + 1, KEYS)) for k in range(KEYS)}


@pytest.fixture
def retained_checkpoint(cluster, tmp_path, capsys) -> tuple[Path, str]:
    """Runs the program throttled, cancels it after a checkpoint completed; returns the
    program and the path of its retained latest checkpoint."""
    script = tmp_path / "running_sum.py"
    script.write_text(JOB)
    checkpoints = f"file://{tmp_path / 'checkpoints'}"
    args = [str(tmp_path / "out-first"), checkpoints, "slow", "sum"]
    assert cli.main(["run", "-d", "-m", cluster.address, str(script), *args]) == 0
    match = re.search(r"JobID ([0-9a-f]+)", capsys.readouterr().out)
    assert match, "the CLI did not print the job id"
    job_id = match.group(1)
    with DispatcherGateway(cluster.address) as gateway:
        deadline = time.monotonic() + DEADLINE_S
        while gateway.checkpoint_statistics(job_id).num_completed < 2:
            assert time.monotonic() < deadline, "no checkpoint completed"
            time.sleep(0.1)  # polling interval
        gateway.cancel_job(job_id)
        details = gateway.wait_for_result(job_id, DEADLINE_S * 1000)
        assert details.status == JobStatus.CANCELED.name
        path = gateway.checkpoint_statistics(job_id).latest_completed_path
    assert path
    return script, path


def test_resumes_keyed_state_and_source_position(cluster, tmp_path, retained_checkpoint, capsys):
    script, path = retained_checkpoint
    out = tmp_path / "out-resumed"
    args = [str(out), f"file://{tmp_path / 'checkpoints'}", "fast", "sum"]
    assert cli.main(["run", "-m", cluster.address, "-s", path, str(script), *args]) == 0
    job_id = re.search(r"JobID ([0-9a-f]+)", capsys.readouterr().out).group(1)

    # The FileSink of the resumed job commits, where the first run wrote it, what that
    # run had written up to the checkpoint, so together the output is the failure-free
    # one.
    _assert_exactly_once(_sums(tmp_path / "out-first", out))
    assert _hidden(tmp_path / "out-first", out) == []
    with DispatcherGateway(cluster.address) as gateway:
        stats = gateway.checkpoint_statistics(job_id)
    assert stats.num_restored == 1
    assert stats.latest_restored_path == path


def test_a_retained_checkpoint_can_be_resumed_twice(cluster, tmp_path, retained_checkpoint):
    """The first resumed run commits the checkpoint's files and deletes what the
    cancelled run wrote after it; the second finds them committed and goes on. Each
    resumed run's output, with the first run's, is the failure-free output."""
    script, path = retained_checkpoint
    first = tmp_path / "out-first"
    for name in ("out-again-1", "out-again-2"):
        out = tmp_path / name
        args = [str(out), f"file://{tmp_path / 'checkpoints'}", "fast", "sum"]
        assert cli.main(["run", "-m", cluster.address, "-s", path, str(script), *args]) == 0
        _assert_exactly_once(_sums(first, out))
        assert _hidden(first, out) == []


def test_refuses_state_of_operators_the_job_lacks(cluster, tmp_path, retained_checkpoint, capsys):
    script, path = retained_checkpoint
    args = [str(tmp_path / "out-renamed"), f"file://{tmp_path / 'checkpoints'}", "fast", "sum2"]
    assert cli.main(["run", "-m", cluster.address, "-s", path, str(script), *args]) == 1
    err = capsys.readouterr().err
    assert "holds state of operators this job does not have" in err
    assert "--allowNonRestoredState" in err

    # Dropping it on purpose: the running sums start from zero, while the source still
    # resumes from its position, so every record arrives once (the first run's up to the
    # checkpoint committed where it wrote them) but the sums end lower.
    assert cli.main(["run", "-m", cluster.address, "-s", path, "-n", str(script), *args]) == 0
    every = _sums(tmp_path / "out-first", tmp_path / "out-renamed")
    resumed = _sums(tmp_path / "out-renamed")
    for key, total in _totals().items():
        assert len(every[key]) == len(range(key, RECORDS, KEYS))
        assert 0 < max(resumed[key]) < total


def test_a_missing_checkpoint_refuses_the_submission(cluster, tmp_path, capsys):
    script = tmp_path / "running_sum.py"
    script.write_text(JOB)
    args = [str(tmp_path / "out"), f"file://{tmp_path / 'checkpoints'}", "fast", "sum"]
    missing = str(tmp_path / "nowhere" / "chk-3")
    assert cli.main(["run", "-m", cluster.address, "-s", missing, str(script), *args]) == 1
    assert f"cannot start from {missing}" in capsys.readouterr().err


# A job that fails for good after a checkpoint completed; argv: checkpoint directory and
# the retention setting.
FAILING_JOB = textwrap.dedent(
    """
    import sys
    import time

    from weir.common import Configuration, WatermarkStrategy
    from weir.datastream import (
        ExternalizedCheckpointRetention, MapFunction, StreamExecutionEnvironment,
    )
    from weir.datastream.connectors.number_seq import NumberSequenceSource
    from weir.datastream.functions import SinkFunction

    checkpoints, retention = sys.argv[1:3]


    class FailAfterACheckpoint(MapFunction):
        completed = 0

        def notify_checkpoint_complete(self, checkpoint_id):
            self.completed = checkpoint_id

        def map(self, value):
            if self.completed:
                raise RuntimeError("planned failure")
            time.sleep(0.001)
            return value


    class DiscardingSink(SinkFunction):
        def invoke(self, value, context):
            pass


    config = Configuration()
    config.set_string("restart-strategy.type", "none")
    env = StreamExecutionEnvironment.get_execution_environment(config)
    env.enable_checkpointing(100)
    checkpoint_config = env.get_checkpoint_config()
    checkpoint_config.set_checkpoint_storage_dir(checkpoints)
    if retention != "default":
        checkpoint_config.set_externalized_checkpoint_retention(
            ExternalizedCheckpointRetention[retention]
        )
    env.from_source(
        NumberSequenceSource(0, 10**9), WatermarkStrategy.no_watermarks(), "numbers"
    ).map(FailAfterACheckpoint()).add_sink(DiscardingSink())
    env.execute("fails after a checkpoint")
    """
)


def test_a_failed_job_says_how_to_resume_from_the_checkpoint_it_kept(cluster, tmp_path, capsys):
    script = tmp_path / "failing.py"
    script.write_text(FAILING_JOB)
    args = [f"file://{tmp_path / 'checkpoints'}", "DELETE_ON_CANCELLATION"]
    assert cli.main(["run", "-m", cluster.address, str(script), *args]) == 1
    err = capsys.readouterr().err
    assert "planned failure" in err
    match = re.search(r"weir run -s (\S+/chk-\d+/_metadata) (.*)$", err, re.MULTILINE)
    assert match, err
    assert match.group(2) == " ".join([str(script), *args])
    assert Path(match.group(1).removeprefix("file://")).is_file()


def test_with_the_default_retention_a_failed_job_names_the_setting(cluster, tmp_path, capsys):
    script = tmp_path / "failing.py"
    script.write_text(FAILING_JOB)
    args = [f"file://{tmp_path / 'checkpoints'}", "default"]
    assert cli.main(["run", "-m", cluster.address, str(script), *args]) == 1
    err = capsys.readouterr().err
    assert "NO_EXTERNALIZED_CHECKPOINTS" in err
    assert "set_externalized_checkpoint_retention" in err
    assert f"weir run -s <its chk-N directory> {script} {' '.join(args)}" in err
    assert not list((tmp_path / "checkpoints").glob("*/chk-*"))
