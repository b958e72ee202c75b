"""The built-in Count over batches of columns on tumbling event-time windows (windows
held as arrays, ``weir.taskmanager.operators.window_columns``): a savepoint taken by
stop at parallelism 2 resumes at parallelism 3 with exactly the counts of an
uninterrupted run, through an exactly-once file sink, and the savepoint holds the open
windows as Arrow column blocks per key group, which ``read_savepoint`` reads as entries
and as one table."""

from __future__ import annotations

import re
import textwrap
import time
from pathlib import Path

import pytest

from weir.client import cli
from weir.client.dispatcher_client import DispatcherGateway
from weir.core.job_status import JobStatus
from weir.state import read_savepoint

pytestmark = pytest.mark.spark

RECORDS = 30_000
KEYS = 37
BATCH = 250
DEADLINE_S = 120

# argv: output directory, checkpoint directory, "slow" or "fast", and optionally
# "records": the count as an AggregateFunction called record by record instead of the
# built-in Count over columns (same uid, same windows), then an auto-watermark interval
# in ms. Record i has key i * 7919 % KEYS
# and event time i ms; windows of one second count each key's records.
JOB = textwrap.dedent(
    f"""
    import sys
    import time

    import numpy as np

    from weir.common import Time, Types, WatermarkStrategy
    from weir.common.watermark_strategy import TimestampAssigner
    from weir.core.columnar import ColumnBatch, ColumnSpec
    from weir.datastream import StreamExecutionEnvironment
    from weir.datastream.aggregate_functions import Count
    from weir.datastream.connectors import FileSink
    from weir.datastream.connectors.file_system import BucketAssigner, Encoder
    from weir.datastream.functions import AggregateFunction
    from weir.datastream.window_functions import ProcessWindowFunction
    from weir.datastream.window import TumblingEventTimeWindows

    out, checkpoints, speed = sys.argv[1:4]
    per_record = sys.argv[4:5] == ["records"]
    interval_ms = int(sys.argv[5]) if len(sys.argv) > 5 else None
    SPEC = ColumnSpec(("f0", "f1"), None, ("int64", "int64"))


    class Reader:
        def __init__(self):
            self.next = 0

        def poll_batch(self, max_records):
            if self.next >= {RECORDS}:
                return None
            if speed == "slow":
                time.sleep(0.05)  # throttles the run the test stops
            i = np.arange(self.next, min({RECORDS}, self.next + {BATCH}), dtype=np.int64)
            self.next += len(i)
            return ColumnBatch({{"f0": i * 7919 % {KEYS}, "f1": i}}, SPEC)

        def snapshot_state(self, checkpoint_id):
            return self.next

        def restore_state(self, state):
            self.next = state

        def close(self):
            pass


    class Records:
        def is_bounded(self):
            return True

        def create_reader(self, context):
            return Reader()


    class Stamp(TimestampAssigner):
        def extract_timestamp(self, value, record_timestamp):
            return value[1]


    class CountRecords(AggregateFunction):
        def create_accumulator(self):
            return 0

        def add(self, value, accumulator):
            return accumulator + 1

        def get_result(self, accumulator):
            return accumulator

        def merge(self, a, b):
            return a + b


    class WithKey(ProcessWindowFunction):
        def process(self, key, context, counts):
            yield f"{{key}},{{context.window().start}},{{next(iter(counts))}}"


    env = StreamExecutionEnvironment.get_execution_environment()
    env.enable_checkpointing(300)
    if interval_ms is not None:
        env.get_config().set_auto_watermark_interval(interval_ms)
    env.get_checkpoint_config().set_checkpoint_storage_dir(checkpoints)
    sink = (
        FileSink.for_row_format(out, Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .build()
    )
    (
        env.from_source(
            Records(),
            WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(Stamp()),
            "records",
            Types.TUPLE([Types.LONG(), Types.LONG()]),
        )
        .set_parallelism(1)
        .uid("records")
        .key_by(lambda r: r[0])
        .window(TumblingEventTimeWindows.of(Time.seconds(1)))
        .aggregate(CountRecords() if per_record else Count(), WithKey(), output_type=Types.STRING())
        .uid("windows")
        .sink_to(sink)
        .uid("files")
    )
    env.execute("columnar window counts")
    """
)


def _expected() -> list[str]:
    counts: dict[tuple[int, int], int] = {}
    for i in range(RECORDS):
        window = (i * 7919 % KEYS, i - i % 1000)
        counts[window] = counts.get(window, 0) + 1
    return sorted(f"{key},{start},{count}" for (key, start), count in counts.items())


def _lines(*outs: Path) -> list[str]:
    return sorted(
        line
        for out in outs
        for path in out.rglob("*")
        if path.is_file() and not path.name.startswith(".")
        for line in path.read_text().splitlines()
    )


def _stop_with_savepoint(cluster, tmp_path, capsys, script, args, parallelism) -> str:
    """Run ``script`` detached at ``parallelism``, stop it with a savepoint once two
    checkpoints completed; the savepoint's path."""
    run = ["run", "-d", "-p", str(parallelism), "-m", cluster.address, str(script), *args]
    assert cli.main(run) == 0
    match = re.search(r"JobID ([0-9a-f]{32})", capsys.readouterr().out)
    assert match, "the CLI did not print the job id"
    job_id = match.group(1)
    with DispatcherGateway(cluster.address) as gateway:
        deadline = time.monotonic() + DEADLINE_S
        while gateway.checkpoint_statistics(job_id).num_completed < 2:
            assert time.monotonic() < deadline, "no checkpoint completed"
            time.sleep(0.1)  # polling interval
    assert cli.main(["stop", "-m", cluster.address, "-p", str(tmp_path / "sp"), job_id]) == 0
    match = re.search(r"Savepoint completed\. Path: (\S+)", capsys.readouterr().out)
    assert match
    with DispatcherGateway(cluster.address) as gateway:
        assert gateway.wait_for_result(job_id, DEADLINE_S * 1000).status == JobStatus.FINISHED.name
    return match.group(1)


@pytest.mark.long
@pytest.mark.parametrize(
    ("first_kind", "then_kind"), [("builtin", "records"), ("records", "builtin")]
)
def test_a_savepoint_restores_into_the_other_path_at_another_parallelism(
    cluster, tmp_path, capsys, first_kind, then_kind
):
    """Columns (the built-in Count) at parallelism 2, resumed at 1 by a job whose window
    counts with an AggregateFunction record by record, and the other way round: the
    restored windows fire with the counts of an uninterrupted run."""
    script = tmp_path / "switched_counts.py"
    script.write_text(JOB)
    checkpoints = f"file://{tmp_path / 'checkpoints'}"
    first, resumed = tmp_path / "out-first", tmp_path / "out-resumed"
    args = [str(first), checkpoints, "slow", first_kind]
    savepoint = _stop_with_savepoint(cluster, tmp_path, capsys, script, args, 2)
    args = [str(resumed), checkpoints, "fast", then_kind]
    run = ["run", "-p", "1", "-m", cluster.address, "-s", savepoint, str(script), *args]
    assert cli.main(run) == 0
    assert _lines(first, resumed) == _expected()


def test_a_savepoint_of_columnar_windows_resumes_at_another_parallelism(cluster, tmp_path, capsys):
    script = tmp_path / "columnar_counts.py"
    script.write_text(JOB)
    checkpoints = f"file://{tmp_path / 'checkpoints'}"
    first, resumed = tmp_path / "out-first", tmp_path / "out-resumed"
    args = [str(first), checkpoints, "slow"]
    assert cli.main(["run", "-d", "-p", "2", "-m", cluster.address, str(script), *args]) == 0
    match = re.search(r"JobID ([0-9a-f]{32})", capsys.readouterr().out)
    assert match, "the CLI did not print the job id"
    job_id = match.group(1)
    with DispatcherGateway(cluster.address) as gateway:
        deadline = time.monotonic() + DEADLINE_S
        while gateway.checkpoint_statistics(job_id).num_completed < 2:
            assert time.monotonic() < deadline, "no checkpoint completed"
            time.sleep(0.1)  # polling interval
    assert cli.main(["stop", "-m", cluster.address, "-p", str(tmp_path / "sp"), job_id]) == 0
    match = re.search(r"Savepoint completed\. Path: (\S+)", capsys.readouterr().out)
    assert match
    savepoint = match.group(1)
    with DispatcherGateway(cluster.address) as gateway:
        assert gateway.wait_for_result(job_id, DEADLINE_S * 1000).status == JobStatus.FINISHED.name

    # The open windows, key by key (key, window start, count): read as any keyed state.
    sp = read_savepoint(savepoint)
    (windows,) = (op for op in sp.operators if op.uid == "windows")
    names = {
        meta.name
        for subtask in sp.metadata.operator_states[windows.operator_id].subtask_states.values()
        for handle in subtask.managed_keyed_state
        for meta in handle.state_meta
        if meta.name.startswith("_weir_window")
    }
    open_windows = [entry for name in sorted(names) for entry in sp.keyed_state("windows", name)]
    assert open_windows, "the savepoint holds no open window"
    # Stored as Arrow column blocks, one row per key and window, not key by key.
    table = sp.keyed_state_columns("windows", "_weir_window_contents")
    assert table is not None, "the open windows were stored key by key"
    contents = dict(sp.keyed_state("windows", "_weir_window_contents"))
    assert table.num_rows == sum(len(per) for per in contents.values())

    # Two subtasks' key groups, read by three.
    args = [str(resumed), checkpoints, "fast"]
    run = ["run", "-p", "3", "-m", cluster.address, "-s", savepoint, str(script), *args]
    assert cli.main(run) == 0
    assert _lines(first, resumed) == _expected()


def test_a_savepoint_holds_only_the_windows_the_data_before_it_left_open(cluster, tmp_path, capsys):
    """The source asks its watermark generator once more right before the barrier: with
    periodic watermarks an hour apart (none comes during the run), every window the
    records before the savepoint closed has fired, and only the newest is in it. The
    output is still exactly the uninterrupted run's."""
    script = tmp_path / "columnar_counts.py"
    script.write_text(JOB)
    checkpoints = f"file://{tmp_path / 'checkpoints'}"
    first, resumed = tmp_path / "out-first", tmp_path / "out-resumed"
    args = [str(first), checkpoints, "slow", "builtin", "3600000"]
    savepoint = _stop_with_savepoint(cluster, tmp_path, capsys, script, args, 1)
    sp = read_savepoint(savepoint)
    contents = dict(sp.keyed_state("windows", "_weir_window_contents"))
    starts = {start for per in contents.values() for start in per}
    assert len(starts) == 1, f"windows the data had closed are in the savepoint: {starts}"
    args = [str(resumed), checkpoints, "fast", "builtin", "3600000"]
    run = ["run", "-p", "1", "-m", cluster.address, "-s", savepoint, str(script), *args]
    assert cli.main(run) == 0
    assert _lines(first, resumed) == _expected()
