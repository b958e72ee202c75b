"""Checkpoints, savepoints and FileSink output in HDFS (webhdfs:// on Hadoop's
MiniDFSCluster), jobs on the MiniCluster: incremental RocksDB checkpoints carry a job
through a TaskManager kill exactly once and leave in ``shared/`` only the files the
retained checkpoint refers to; a savepoint written to HDFS is read back with
``weir.state.read_savepoint`` and resumed at another parallelism, exactly once; a FileSource
reads a directory of HDFS (hidden files left out) into a FileSink there."""

from __future__ import annotations

import random
import re
import uuid
from collections import Counter

import fsspec
import pytest
from test_checkpoint_recovery import (
    RESTARTS,
    Paced,
    await_condition,
    expected_lines,
    kill_a_task_manager,
)

from weir.client import cli
from weir.client.dispatcher_client import DispatcherGateway
from weir.common import Configuration, Types, WatermarkStrategy
from weir.core.checkpoint import decode_metadata
from weir.datastream import KeyedProcessFunction, StreamExecutionEnvironment
from weir.datastream.connectors import FileSink
from weir.datastream.connectors.file_system import BucketAssigner, Encoder
from weir.datastream.connectors.number_seq import NumberSequenceSource
from weir.datastream.state import ValueStateDescriptor
from weir.state import read_savepoint

pytestmark = pytest.mark.spark

DEADLINE_S = 180


@pytest.fixture
def hdfs(hadoop) -> str:
    """A directory of this test's own in HDFS, as a webhdfs:// URL."""
    return hadoop.webhdfs_url(f"/state-in-hdfs/{uuid.uuid4().hex[:12]}")


def _committed(url: str) -> Counter[str]:
    fs, root = fsspec.core.url_to_fs(url)
    lines: Counter[str] = Counter()
    for path in fs.find(root) if fs.exists(root) else []:
        if not path.rsplit("/", 1)[-1].startswith("."):
            lines.update(fs.cat_file(path).decode().splitlines())
    return lines


class RunningTotal(KeyedProcessFunction):
    """The reduce of the running sum, with its state named for the savepoint reader."""

    def open(self, runtime_context):
        self.total = runtime_context.get_state(ValueStateDescriptor("total", Types.LONG()))

    def process_element(self, value, ctx):
        total = (self.total.value() or 0) + value[1]
        self.total.update(total)
        yield f"{value[0]},{total}"


def _running_sum(base: str, records: int, config: dict[str, str]) -> StreamExecutionEnvironment:
    configuration = Configuration()
    for key, value in {**RESTARTS, **config}.items():
        configuration.set_string(key, value)
    env = StreamExecutionEnvironment.get_execution_environment(configuration)
    env.set_parallelism(2)
    env.enable_checkpointing(200)
    env.get_checkpoint_config().set_checkpoint_storage_dir(f"{base}/checkpoints")
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
        .map(Paced(0.001))
        .set_parallelism(1)
        .key_by(lambda kv: kv[0])
        .process(RunningTotal(), output_type=Types.STRING())
        .uid("sum")
        .sink_to(sink)
        .uid("files")
    )
    return env


def test_incremental_checkpoints_in_hdfs_recover_a_killed_task_manager_and_drop_unused_files(
    cluster, hdfs
) -> None:
    records = 6_000
    config = {
        "state.backend.type": "rocksdb",
        "state.backend.incremental": "true",
        "execution.checkpointing.num-retained": "1",
        "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
    }
    client = _running_sum(hdfs, records, config).execute_async("running sum in HDFS")
    job_id = str(client.get_job_id())
    fs, base = fsspec.core.url_to_fs(hdfs)
    shared = f"{base}/checkpoints/{job_id}/shared"
    with DispatcherGateway(cluster.address) as gateway:
        await_condition(
            lambda: fs.exists(shared) and fs.ls(shared), "SST files in HDFS", DEADLINE_S
        )
        kill_a_task_manager(gateway, job_id, random.Random(2), 0)
    client.get_job_execution_result().result()

    assert _committed(f"{hdfs}/out") == expected_lines(records)
    (metadata,) = fs.glob(f"{base}/checkpoints/{job_id}/chk-*/_metadata")
    referenced = decode_metadata(fs.cat_file(metadata)).shared_paths()
    assert referenced and all(p.startswith(f"{hdfs}/checkpoints/") for p in referenced)
    # Only what the one retained checkpoint refers to is left in shared/.
    assert {p.rsplit("/", 1)[-1] for p in fs.ls(shared)} == {
        p.rsplit("/", 1)[-1] for p in referenced
    }


@pytest.mark.long  # savepoints in remote storage are in make test on S3
def test_a_savepoint_in_hdfs_is_read_back_and_resumed_at_another_parallelism(
    cluster, hdfs, tmp_path, capsys
) -> None:
    records = 20_000
    script = tmp_path / "running_sum.py"
    script.write_text(
        "import sys\n"
        "from test_state_in_hdfs import _running_sum\n"
        f"_running_sum(sys.argv[1], {records}, {{}}).execute('running sum')\n"
    )
    address = cluster.address
    with DispatcherGateway(address) as gateway:
        before = {job.job_id for job in gateway.list_jobs(include_terminated=True)}
        assert cli.main(["run", "-d", "-m", address, str(script), f"{hdfs}/first"]) == 0
        (job_id,) = {job.job_id for job in gateway.list_jobs(include_terminated=True)} - before
        await_condition(
            lambda: gateway.checkpoint_statistics(job_id).num_completed >= 1,
            "a checkpoint",
            DEADLINE_S,
        )
        capsys.readouterr()
        assert cli.main(["stop", "-m", address, "-p", f"{hdfs}/savepoints", job_id]) == 0
        found = re.search(r"Savepoint completed\. Path: (\S+)", capsys.readouterr().out)
        assert found is not None
        path = found.group(1)
        assert path.startswith(f"{hdfs}/savepoints/savepoint-")
        assert gateway.wait_for_result(job_id, DEADLINE_S * 1000).status == "FINISHED"

    savepoint = read_savepoint(path)
    by_uid = {op.uid: op for op in savepoint.operators}
    assert by_uid["sum"].parallelism == 2
    totals = dict(savepoint.keyed_state("sum", "total"))
    assert set(totals) == {0, 1, 2, 3}
    assert 0 < sum(totals.values()) < records * (records + 1) // 2

    run = ["run", "-p", "3", "-m", address, "-s", path, str(script), f"{hdfs}/resumed"]
    assert cli.main(run) == 0
    committed = _committed(f"{hdfs}/first/out") + _committed(f"{hdfs}/resumed/out")
    assert committed == expected_lines(records)


def test_a_file_source_reads_hdfs_and_a_file_sink_writes_it(cluster, hdfs) -> None:
    from weir.datastream.connectors import FileSource, StreamFormat

    fs, base = fsspec.core.url_to_fs(hdfs)
    lines = [f"line {i}" for i in range(1_000)]
    fs.pipe_file(f"{base}/in/a.txt", "\n".join(lines[:600]).encode() + b"\n")
    fs.pipe_file(f"{base}/in/sub/b.txt", "\n".join(lines[600:]).encode() + b"\n")
    fs.pipe_file(f"{base}/in/.hidden", b"not read\n")
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    env.enable_checkpointing(200)
    source = FileSource.for_record_stream_format(
        StreamFormat.text_line_format(), f"{hdfs}/in"
    ).build()
    sink = (
        FileSink.for_row_format(f"{hdfs}/out", Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .build()
    )
    (
        env.from_source(source, WatermarkStrategy.no_watermarks(), "files")
        .map(lambda line: line.upper(), output_type=Types.STRING())
        .sink_to(sink)
    )
    env.execute("HDFS in, HDFS out")
    assert _committed(f"{hdfs}/out") == Counter(line.upper() for line in lines)
