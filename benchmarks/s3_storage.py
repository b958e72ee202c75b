"""Checkpoints and files on S3 against a local directory, on a MiniCluster of two local
TaskManagers and a MinIO server on 127.0.0.1 (tests/minio_server.py; built with
``make minio`` or by this script the first time):

- checkpoint end-to-end duration (trigger to completion, from ``_metadata``) and size of
  the keyed benchmark's state (``--keys`` keys of 1 KB values) on ``hashmap`` (full), on
  ``rocksdb`` full and on ``rocksdb`` incremental (size: what the checkpoint uploaded);
- FileSink throughput: ``--sink-mb`` MB of 1 KiB lines written exactly once (MB/s over
  the job's wall time, job start included in both);
- time to restore: SIGKILL of a TaskManager to every task RUNNING again on the latest
  checkpoint's state, with rocksdb incremental state.

MinIO here keeps its objects on the same disk as the local directory, so the difference
is the S3 protocol and MinIO's work (HTTP, signing, erasure-coding metadata), not a
network. Figures are reported, not asserted: ``python benchmarks/s3_storage.py``.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from minio_server import MinioServer  # noqa: E402 (the tests' MinIO server)

from weir.client.dispatcher_client import DispatcherGateway  # noqa: E402
from weir.client.mini_cluster import MiniCluster  # noqa: E402
from weir.common import Configuration, Types, WatermarkStrategy  # noqa: E402
from weir.core.checkpoint import decode_metadata  # noqa: E402
from weir.core.executor import register_executor  # noqa: E402
from weir.datastream import (  # noqa: E402
    ExternalizedCheckpointRetention,
    StreamExecutionEnvironment,
)
from weir.datastream.connectors import FileSink  # noqa: E402
from weir.datastream.connectors.file_system import (  # noqa: E402
    BucketAssigner,
    Encoder,
    RollingPolicy,
)
from weir.datastream.connectors.number_seq import NumberSequenceSource  # noqa: E402

CLUSTER_CONFIG = {
    "spark.master": "local[2]",
    "resourcemanager.taskmanager.max": "2",
    "heartbeat.interval": "500 ms",
    "heartbeat.timeout": "6 s",
    "slot.request.timeout": "60 s",
}
# Polling, not waiting on a condition variable: the job runs in other processes.
POLL_S = 0.05
LINE = 1024


def _poll(condition: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(POLL_S)
    msg = f"timed out after {timeout} s waiting for {what}"
    raise TimeoutError(msg)


class Storage:
    """A place for checkpoints and files: a local directory or a bucket of the server."""

    def __init__(self, name: str, url: str, fs: Any, root: str, config: dict[str, str]):
        self.name, self.url, self.fs, self.root, self.config = name, url, fs, root, config

    def metadata(self, sub: str) -> list[Any]:
        found = self.fs.glob(f"{self.root}/{sub}/*/chk-*/_metadata")
        return [decode_metadata(self.fs.cat_file(p)) for p in found]


def _env(storage: Storage, sub: str, interval_ms: int, config: dict[str, str]):
    configuration = Configuration()
    settings = {
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": "10",
        "restart-strategy.fixed-delay.delay": "100 ms",
        "execution.checkpointing.num-retained": "100",
        **storage.config,
        **config,
    }
    for key, value in settings.items():
        configuration.set_string(key, value)
    env = StreamExecutionEnvironment.get_execution_environment(configuration)
    env.set_parallelism(2)
    env.enable_checkpointing(interval_ms)
    checkpoints = env.get_checkpoint_config()
    checkpoints.set_checkpoint_storage_dir(f"{storage.url}/{sub}")
    checkpoints.set_checkpoint_timeout(300_000)
    checkpoints.set_externalized_checkpoint_retention(
        ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION
    )
    return env


def checkpoint_figures(
    storage: Storage, backend: dict[str, str], keys: int, gateway: DispatcherGateway, tag: str
) -> tuple[list[int], list[int], int]:
    """(durations ms, sizes uploaded per checkpoint, full state bytes) of the checkpoints
    taken once every key holds a 1 KB value, while values keep changing."""
    env = _env(storage, tag, 2000, backend)
    (
        env.from_source(
            NumberSequenceSource(0, 10**12), WatermarkStrategy.no_watermarks(), "numbers"
        )
        .map(lambda x: (x % keys, os.urandom(500).hex()))
        .key_by(lambda kv: kv[0])
        .reduce(lambda a, b: b)
        .filter(lambda kv: False)
        .add_sink(lambda kv: None)
    )
    client = env.execute_async(f"bench-s3-{tag}")
    target = keys * 1000 * 0.9

    def four_full() -> list[Any] | None:
        full = [m for m in storage.metadata(tag) if m.state_size >= target]
        return full if len(full) >= 4 else None

    full: list[Any] = _poll(four_full, 900, "four checkpoints of the full state")
    gateway.cancel_job(str(client.get_job_id()))
    full.sort(key=lambda m: m.checkpoint_id)
    durations = [m.completion_timestamp_ms - m.trigger_timestamp_ms for m in full]
    uploaded = [m.checkpointed_size for m in full]
    return durations, uploaded, max(m.state_size for m in full)


def sink_throughput(storage: Storage, megabytes: int, tag: str) -> float:
    """MB/s of a bounded job writing ``megabytes`` MB of lines through an exactly-once
    FileSink (wall time of the job, start included)."""
    records = megabytes * 1024
    env = _env(storage, f"{tag}-checkpoints", 1000, {})
    sink = (
        FileSink.for_row_format(f"{storage.url}/{tag}", Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .with_rolling_policy(RollingPolicy.default_rolling_policy(part_size=64 << 20))
        .build()
    )
    pad = "x" * (LINE - 9)
    (
        env.from_source(
            NumberSequenceSource(0, records - 1), WatermarkStrategy.no_watermarks(), "numbers"
        )
        .map(lambda x: f"{x:08d}{pad}", output_type=Types.STRING())
        .sink_to(sink)
    )
    started = time.monotonic()
    env.execute(f"bench-sink-{tag}")
    seconds = time.monotonic() - started
    written = sum(storage.fs.size(p) for p in storage.fs.find(f"{storage.root}/{tag}"))
    assert written == records * LINE, (written, records * LINE)
    return megabytes / seconds


def restore_seconds(storage: Storage, gateway: DispatcherGateway, keys: int, tag: str) -> float:
    """Seconds from SIGKILLing a TaskManager to every task RUNNING again, restored from the
    latest checkpoint (rocksdb incremental, ``keys`` keys of 1 KB)."""
    backend = {"state.backend.type": "rocksdb", "state.backend.incremental": "true"}
    env = _env(storage, tag, 1000, backend)
    (
        env.from_source(
            NumberSequenceSource(0, 10**12), WatermarkStrategy.no_watermarks(), "numbers"
        )
        .map(lambda x: (x % keys, os.urandom(500).hex()))
        .key_by(lambda kv: kv[0])
        .reduce(lambda a, b: b)
        .filter(lambda kv: False)
        .add_sink(lambda kv: None)
    )
    client = env.execute_async(f"bench-restore-{tag}")
    job_id = str(client.get_job_id())

    def running(attempt: int) -> Any:
        details = gateway.job_details(job_id)
        ok = details.status == "RUNNING" and all(
            t.state == "RUNNING" and t.attempt_number >= attempt for t in details.tasks
        )
        return details.tasks if ok and details.tasks else None

    _poll(
        lambda: [m for m in storage.metadata(tag) if m.state_size >= keys * 900],
        900,
        "a checkpoint of the full state",
    )
    tasks = _poll(lambda: running(0), 120, "the job to run")
    (victim,) = [
        tm for tm in gateway.list_task_managers() if tm.resource_id == tasks[0].resource_id
    ]
    killed = time.monotonic()
    os.kill(victim.pid, signal.SIGKILL)
    _poll(lambda: running(1), 300, "the job to run again")
    seconds = time.monotonic() - killed
    gateway.cancel_job(job_id)
    return seconds


def _ms(values: list[int]) -> str:
    return f"median {statistics.median(values):,.0f} ms ({', '.join(f'{v:,}' for v in values)})"


def _mib(values: list[int]) -> str:
    return f"{statistics.median(values) / 2**20:.1f} MiB"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--keys", type=int, default=20_000)
    parser.add_argument("--sink-mb", type=int, default=100)
    args = parser.parse_args()
    import fsspec

    with (
        tempfile.TemporaryDirectory(prefix="weir-bench-s3-") as tmp,
        MinioServer(pathlib.Path(tmp) / "minio") as server,
        MiniCluster(CLUSTER_CONFIG) as cluster,
        DispatcherGateway(cluster.address) as gateway,
    ):
        register_executor(cluster.executor())
        bucket = server.new_bucket("bench")
        local_fs = fsspec.filesystem("file")
        places = [
            Storage("local", f"file://{tmp}/local", local_fs, f"{tmp}/local", {}),
            Storage("S3", f"s3://{bucket}", server.file_system(), bucket, server.config()),
        ]
        backends = {
            "hashmap (full)": {"state.backend.type": "hashmap"},
            "rocksdb full": {"state.backend.type": "rocksdb", "state.backend.incremental": "false"},
            "rocksdb incremental": {
                "state.backend.type": "rocksdb",
                "state.backend.incremental": "true",
            },
        }
        print(f"keyed state: {args.keys:,} keys of 1 KB values, p=2, checkpoints every 2 s")
        for label, backend in backends.items():
            for place in places:
                tag = f"{label.split()[0]}-{label.split()[-1].strip('()')}"
                durations, uploaded, size = checkpoint_figures(
                    place, backend, args.keys, gateway, tag
                )
                print(
                    f"  {label:<20} {place.name:<5} state {size / 2**20:6.1f} MiB, uploaded "
                    f"{_mib(uploaded)} per checkpoint, {_ms(durations)}",
                    flush=True,
                )
        for place in places:
            rate = sink_throughput(place, args.sink_mb, f"sink-{place.name.lower()}")
            print(f"FileSink {args.sink_mb} MB of 1 KiB lines to {place.name}: {rate:.1f} MB/s")
        for place in places:
            seconds = restore_seconds(place, gateway, args.keys, f"restore-{place.name.lower()}")
            print(f"restore after a TaskManager kill, checkpoints on {place.name}: {seconds:.2f} s")
        register_executor(None)


if __name__ == "__main__":
    main()
