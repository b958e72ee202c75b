"""What one checkpoint costs on WebHDFS: HTTP requests by kind, and end-to-end duration,
beside the same job checkpointing to a local directory.

    python benchmarks/webhdfs_checkpoints.py [--checkpoints N] [--webhdfs HOST:PORT]
        [--keys N] [--state-backend hashmap|rocksdb-incremental] [--verbose]

Without ``--webhdfs`` HDFS is the test suite's Hadoop minicluster (tests/hadoop_cluster.py:
a NameNode and a DataNode with WebHDFS on 127.0.0.1, fetched with Maven on first use).

The job: a rate-limited generator (p=1, 200 records a second), a keyed running sum over
``--keys`` keys (4) and a ``FileSink`` (p=2), on the embedded MiniCluster with two local
TaskManagers; with hashmap state and 4 keys its checkpoints hold about 1 KB.
``--state-backend rocksdb-incremental`` takes incremental RocksDB checkpoints instead (new
SST files in ``shared/`` each time). Each storage runs twice:

* counted: the job reaches HDFS through a reverse proxy on 127.0.0.1 that forwards to the
  NameNode, rewrites its redirects so that DataNode requests pass through it too, and
  counts every request by operation and by server (``CREATE`` at the NameNode, then
  ``CREATE@DataNode`` where it redirected), apart for the checkpoint directory and the
  sink's output. Checkpoints are taken with ``min-pause`` between them; the counts of a
  checkpoint are those from 0.7 s after the previous one completed (its notifications,
  the sink's commit and the deletion of what it subsumed done) to 0.7 s after it did, so
  each window holds one whole checkpoint cycle; the median of each kind is reported.
  With hashmap state they are the same cycle after cycle.
* timed: the job talks to the NameNode directly, and each checkpoint's end-to-end
  duration (trigger to completion, as the JobMaster reports it) is taken.

Figures are reported, not asserted.
"""

from __future__ import annotations

import argparse
import http.client
import http.server
import os
import pathlib
import statistics
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from weir.client.dispatcher_client import DispatcherGateway
from weir.client.mini_cluster import MiniCluster
from weir.common import Configuration, Types, WatermarkStrategy
from weir.core.executor import register_executor
from weir.datastream import StreamExecutionEnvironment
from weir.datastream.connectors import DataGeneratorSource, FileSink, RateLimiterStrategy
from weir.datastream.connectors.file_system import BucketAssigner, Encoder

CLUSTER_CONFIG = {
    "spark.master": "local[2]",
    "resourcemanager.taskmanager.max": "2",
    "heartbeat.interval": "500 ms",
    "heartbeat.timeout": "30 s",
    "slot.request.timeout": "120 s",
}
TESTS = pathlib.Path(__file__).resolve().parents[1] / "tests"
# Records a second: a trickle, so that a checkpoint's cost is its storage's, not the data's.
RATE = 200
# Between two checkpoints: the previous one's notifications, the sink's commit and the
# deletion of the checkpoint it subsumed end well within SETTLE_S, and nothing of the
# next one starts before MIN_PAUSE_MS.
MIN_PAUSE_MS = 1500
SETTLE_S = 0.7
POLL_S = 0.02
DATANODE_PREFIX = "/__datanode/"


# -- the counting proxy --------------------------------------------------------------------


@dataclass(frozen=True)
class JobShape:
    """How many keys the running sum has, and the settings of its state backend."""

    keys: int = 4
    settings: dict[str, str] = field(default_factory=dict)


BACKENDS = {
    "hashmap": {},
    "rocksdb-incremental": {"state.backend.type": "rocksdb", "state.backend.incremental": "true"},
}


class CountingProxy:
    """A reverse proxy for WebHDFS on 127.0.0.1: every request, to the NameNode or to a
    DataNode it redirects to, is forwarded and counted by (area, kind)."""

    def __init__(self, namenode: str, areas: dict[str, str]) -> None:
        self.namenode = namenode
        self.areas = areas  # path prefix -> area name
        self.counts: Counter[tuple[str, str]] = Counter()
        self.requests: list[tuple[str, str]] = []  # (kind, path), in order
        self._lock = threading.Lock()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _forward(self) -> None:
                proxy.forward(self)

            do_GET = do_PUT = do_POST = do_DELETE = _forward

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.address = f"127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def snapshot(self) -> Counter[tuple[str, str]]:
        with self._lock:
            return Counter(self.counts)

    def requests_since(self, start: int) -> list[tuple[str, str]]:
        with self._lock:
            return self.requests[start:]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _area(self, path: str) -> str:
        for prefix, area in self.areas.items():
            if path.startswith(prefix):
                return area
        return "other"

    def _rewrite(self, location: str) -> str:
        """A redirect to a DataNode, made to pass through this proxy."""
        parts = urllib.parse.urlsplit(location)
        return f"http://{self.address}{DATANODE_PREFIX}{parts.netloc}{parts.path}?{parts.query}"

    def forward(self, handler: http.server.BaseHTTPRequestHandler) -> None:
        target, upstream_path = self.namenode, handler.path
        if handler.path.startswith(DATANODE_PREFIX):
            target, _, rest = handler.path[len(DATANODE_PREFIX) :].partition("/")
            upstream_path = "/" + rest
        url = urllib.parse.urlsplit(upstream_path)
        query = urllib.parse.parse_qs(url.query)
        op = query.get("op", ["?"])[0].upper()
        hdfs_path = url.path.removeprefix("/webhdfs/v1")
        kind = op if target == self.namenode else f"{op}@DataNode"
        with self._lock:
            self.counts[(self._area(hdfs_path), kind)] += 1
            self.requests.append((kind, hdfs_path))
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else None
        headers = {
            k: v for k, v in handler.headers.items() if k.lower() not in ("host", "connection")
        }
        connection = http.client.HTTPConnection(target, timeout=120)
        try:
            connection.request(handler.command, upstream_path, body=body, headers=headers)
            reply = connection.getresponse()
            data = reply.read()
        finally:
            connection.close()
        handler.send_response(reply.status, reply.reason)
        for key, value in reply.getheaders():
            if key.lower() in ("transfer-encoding", "connection", "content-length"):
                continue
            handler.send_header(key, self._rewrite(value) if key.lower() == "location" else value)
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)


# -- the job -------------------------------------------------------------------------------


def _job(checkpoints: str, output: str, shape: JobShape) -> StreamExecutionEnvironment:
    configuration = Configuration()
    configuration.set_string("restart-strategy.type", "none")
    for key, value in shape.settings.items():
        configuration.set_string(key, value)
    keys = shape.keys
    env = StreamExecutionEnvironment.get_execution_environment(configuration)
    env.set_parallelism(2)
    env.enable_checkpointing(1000)
    config = env.get_checkpoint_config()
    config.set_checkpoint_storage_dir(checkpoints)
    config.set_min_pause_between_checkpoints(MIN_PAUSE_MS)
    config.set_checkpoint_timeout(120_000)
    sink = (
        FileSink.for_row_format(output, Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .build()
    )
    (
        env.from_source(
            DataGeneratorSource(
                lambda i: i, 10**12, RateLimiterStrategy.per_second(RATE), Types.LONG()
            ),
            WatermarkStrategy.no_watermarks(),
            "numbers",
        )
        .set_parallelism(1)
        .map(lambda i: (i % keys, 1))
        .key_by(lambda kv: kv[0])
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
        .map(lambda kv: f"{kv[0]},{kv[1]}", output_type=Types.STRING())
        .sink_to(sink)
    )
    return env


def _completions(gateway: DispatcherGateway, job_id: str, count: int) -> Iterator[tuple]:
    """Yield (checkpoint id, end-to-end ms, state bytes) as each of ``count`` checkpoints
    completes, right when it is seen."""
    seen = 0
    deadline = time.monotonic() + 120 + 30 * count
    while seen < count:
        if time.monotonic() > deadline:
            msg = f"only {seen} of {count} checkpoints completed in time"
            raise TimeoutError(msg)
        stats = gateway.checkpoint_statistics(job_id)
        latest = stats.latest_completed
        if stats.num_failed:
            msg = f"a checkpoint failed: {stats.latest_failed}"
            raise RuntimeError(msg)
        if latest is not None and stats.num_completed > seen:
            if stats.num_completed > seen + 1 and seen:
                msg = "two checkpoints completed between two polls; raise MIN_PAUSE_MS"
                raise RuntimeError(msg)
            seen = stats.num_completed
            yield latest.checkpoint_id, latest.end_to_end_duration_ms, latest.state_size_bytes
        time.sleep(POLL_S)


@contextmanager
def _running(gateway: DispatcherGateway, env: StreamExecutionEnvironment, name: str):
    client = env.execute_async(name)
    job_id = str(client.get_job_id())
    try:
        yield job_id
    finally:
        gateway.cancel_job(job_id)
        deadline = time.monotonic() + 60
        while gateway.job_details(job_id).status not in ("CANCELED", "FAILED", "FINISHED"):
            if time.monotonic() > deadline:
                break
            time.sleep(POLL_S * 10)


def timed(
    gateway: DispatcherGateway, root: str, count: int, name: str, shape: JobShape
) -> tuple[list[int], int]:
    """End-to-end ms of ``count`` checkpoints (after a first one, left out) and the state
    size of the last."""
    env = _job(f"{root}/chk", f"{root}/out", shape)
    durations: list[int] = []
    sizes = [0]
    with _running(gateway, env, f"bench-webhdfs-{name}-timed") as job_id:
        for i, (_, duration, size) in enumerate(_completions(gateway, job_id, count + 1)):
            sizes.append(size)
            if i:
                durations.append(duration)
    return durations, sizes[-1]


def counted(
    gateway: DispatcherGateway, proxy: CountingProxy, root: str, count: int, shape: JobShape
) -> tuple[list[Counter[tuple[str, str]]], list[tuple[str, str]]]:
    """The requests of each of ``count`` whole checkpoint cycles, and those of the last
    cycle in order."""
    env = _job(
        f"webhdfs://{proxy.address}{root}/chk", f"webhdfs://{proxy.address}{root}/out", shape
    )
    windows: list[Counter[tuple[str, str]]] = []
    last: list[tuple[str, str]] = []
    with _running(gateway, env, "bench-webhdfs-counted") as job_id:
        previous: Counter[tuple[str, str]] | None = None
        start = 0
        for _ in _completions(gateway, job_id, count + 1):
            time.sleep(SETTLE_S)  # the window's edge; see the module docstring
            now, requests = proxy.snapshot(), proxy.requests_since(0)
            if previous is not None:
                windows.append(now - previous)
                last = requests[start:]
            previous, start = now, len(requests)
    return windows, last


def _kinds(window: Counter[tuple[str, str]], area: str) -> str:
    kinds = sorted((kind, n) for (a, kind), n in window.items() if a == area)
    return ", ".join(f"{kind} {n}" for kind, n in kinds) or "none"


def _median_window(windows: list[Counter[tuple[str, str]]]) -> Counter[tuple[str, str]]:
    keys = {k for w in windows for k in w}
    return Counter({k: round(statistics.median(w[k] for w in windows)) for k in keys})


def _hadoop(address: str | None) -> tuple[str, object]:
    if address:
        return address, None
    sys.path.insert(0, str(TESTS))
    from hadoop_cluster import SharedMiniHadoop

    shared = SharedMiniHadoop(pathlib.Path(tempfile.mkdtemp(prefix="weir-bench-hadoop-")))
    cluster = shared.acquire()
    return cluster.webhdfs_address, shared


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--checkpoints", type=int, default=10)
    parser.add_argument("--webhdfs", help="a NameNode's HTTP address; default: a minicluster")
    parser.add_argument("--verbose", action="store_true", help="list the last cycle's requests")
    parser.add_argument("--keys", type=int, default=4, help="keys of the running sum")
    parser.add_argument("--state-backend", choices=sorted(BACKENDS), default="hashmap")
    args = parser.parse_args()
    shape = JobShape(args.keys, BACKENDS[args.state_backend])
    namenode, shared = _hadoop(args.webhdfs)
    root = f"/bench-webhdfs/{uuid.uuid4().hex[:8]}"
    areas = {f"{root}/counted/chk": "checkpoints", f"{root}/counted/out": "sink"}
    proxy = CountingProxy(namenode, areas)
    try:
        with (
            MiniCluster(CLUSTER_CONFIG) as cluster,
            DispatcherGateway(cluster.address) as gateway,
            tempfile.TemporaryDirectory(prefix="weir-bench-") as local,
        ):
            register_executor(cluster.executor())
            windows, last = counted(gateway, proxy, f"{root}/counted", args.checkpoints, shape)
            per = _median_window(windows)
            same = all(w == windows[0] for w in windows)
            hdfs_ms, hdfs_size = timed(
                gateway, f"webhdfs://{namenode}{root}/timed", args.checkpoints, "hdfs", shape
            )
            local_ms, local_size = timed(
                gateway, f"file://{os.path.join(local, 'timed')}", args.checkpoints, "local", shape
            )
    finally:
        proxy.close()
        if shared is not None:
            shared.release()
    checkpoint_requests = sum(n for (a, _), n in per.items() if a == "checkpoints")
    sink_requests = sum(n for (a, _), n in per.items() if a == "sink")
    print(f"{len(windows)} checkpoint cycles counted; every cycle the same: {same}")
    print(f"requests per checkpoint, checkpoint storage: {checkpoint_requests}")
    print(f"    {_kinds(per, 'checkpoints')}")
    print(f"requests per checkpoint, FileSink output:    {sink_requests}")
    print(f"    {_kinds(per, 'sink')}")
    if args.verbose:
        print("the last cycle's requests, in order:")
        for kind, path in last:
            print(f"    {kind:<20} {path.removeprefix(root)}")
    if not same:
        for i, w in enumerate(windows):
            print(f"    cycle {i}: {_kinds(w, 'checkpoints')} | {_kinds(w, 'sink')}")
    for name, durations, size in (
        ("WebHDFS", hdfs_ms, hdfs_size),
        ("local directory", local_ms, local_size),
    ):
        print(
            f"end to end, {name:<16} median {statistics.median(durations):>6.0f} ms, "
            f"min {min(durations)} ms, max {max(durations)} ms "
            f"({len(durations)} checkpoints of {size:,} bytes)"
        )


if __name__ == "__main__":
    main()
