"""What a checkpoint asks of HDFS through WebHDFS, counted request by request on Hadoop's
MiniDFSCluster: the coordinator's and the tasks' storage calls of one checkpoint, as the
CheckpointCoordinator and each task make them. Small state stays inline in ``_metadata``,
tasks create no directories, and ``_metadata`` is one file and one rename; state at the
inline threshold or above is one file of its own; a restore reads a file with two
requests. The counts are exact: each storage call is a fixed number of requests."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections import Counter
from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import fsspec
import pytest

from weir.core.checkpoint import create_checkpoint_storage, read_metadata_at, read_state
from weir.core.ids import JobId
from weir.core.webhdfs import WebHdfsFileSystem

INLINE_THRESHOLD = 20 * 1024  # execution.checkpointing.data-inline-threshold's default


@pytest.fixture
def root(hadoop) -> str:
    return hadoop.webhdfs_url(f"/checkpoint-requests/{uuid.uuid4().hex[:12]}")


@contextlib.contextmanager
def requests_to(fs: WebHdfsFileSystem) -> Iterator[Counter[str]]:
    """Every HTTP request ``fs`` makes meanwhile, by WebHDFS operation; those a NameNode
    redirected to a DataNode as ``OP@DataNode``."""
    namenode = urlsplit(str(fs.url)).netloc
    counts: Counter[str] = Counter()

    def count(reply, *args, **kwargs) -> None:
        url = urlsplit(reply.request.url)
        op = parse_qs(url.query).get("op", ["?"])[0].upper()
        counts[op if url.netloc == namenode else f"{op}@DataNode"] += 1

    fs.session.hooks["response"].append(count)
    try:
        yield counts
    finally:
        fs.session.hooks["response"].remove(count)


def _fs(url: str) -> WebHdfsFileSystem:
    fs, _ = fsspec.core.url_to_fs(url)
    assert isinstance(fs, WebHdfsFileSystem)
    return fs


def test_a_checkpoint_of_small_state_is_five_requests(root: str) -> None:
    fs = _fs(root)
    job_id = JobId(uuid.uuid4().hex)
    config = {"execution.checkpointing.dir": root}
    coordinator = create_checkpoint_storage(config, job_id)
    tasks = [create_checkpoint_storage(config, job_id) for _ in range(3)]  # each task's own
    coordinator.initialize_base_locations()
    coordinator.init_checkpoint(1)
    coordinator.write_metadata(1, b"checkpoint 1")

    with requests_to(fs) as counts:
        coordinator.init_checkpoint(2)  # the trigger
        handles = [
            task.resolve_checkpoint(2).write_state(f"op-{i}-keyed", b"k" * 5_300)
            for i, task in enumerate(tasks)
        ]
        pointer = coordinator.write_metadata(2, b"checkpoint 2")
        coordinator.discard_checkpoint(1)  # subsumed

    assert counts == {"MKDIRS": 1, "CREATE": 1, "CREATE@DataNode": 1, "RENAME": 1, "DELETE": 1}
    assert all(h.path is None and read_state(h) == b"k" * 5_300 for h in handles)
    assert read_metadata_at(pointer) == b"checkpoint 2"
    base = f"{root}/{job_id}"
    assert sorted(p.rsplit("/", 1)[1] for p in fs.ls(f"{base}/chk-2", detail=False)) == [
        "_metadata"
    ]
    assert not fs.exists(f"{base}/chk-1")


def test_state_at_the_inline_threshold_is_a_file_of_its_own(root: str) -> None:
    fs = _fs(root)
    job_id = JobId(uuid.uuid4().hex)
    config = {"execution.checkpointing.dir": root}
    create_checkpoint_storage(config, job_id).init_checkpoint(1)
    task = create_checkpoint_storage(config, job_id)
    data = os.urandom(INLINE_THRESHOLD)

    with requests_to(fs) as counts:
        handle = task.resolve_checkpoint(1).write_state("op-0-keyed", data)
        small = task.resolve_checkpoint(1).write_state("op-1-keyed", data[:-1])
    assert counts == {"CREATE": 1, "CREATE@DataNode": 1}
    assert handle.path == f"{root}/{job_id}/chk-1/op-0-keyed"
    assert small.path is None

    with requests_to(fs) as counts:
        assert read_state(handle) == data
    assert counts == {"OPEN": 1, "OPEN@DataNode": 1}
    with requests_to(fs) as counts:
        task.check_exists(handle)
    assert counts == {"GETFILESTATUS": 1}


def test_a_threshold_of_zero_writes_every_piece_of_state_to_a_file(root: str) -> None:
    # The key's older name still works, as in Flink.
    config = {"execution.checkpointing.dir": root, "state.storage.fs.memory-threshold": "0"}
    job_id = JobId(uuid.uuid4().hex)
    storage = create_checkpoint_storage(config, job_id)
    handle = storage.init_checkpoint(1).write_state("op-0-source", b"offset 42")
    assert handle.path == f"{root}/{job_id}/chk-1/op-0-source"
    assert read_state(handle) == b"offset 42"
