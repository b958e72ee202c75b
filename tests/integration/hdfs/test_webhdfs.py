"""webhdfs:// on Hadoop's MiniDFSCluster: the file-system operations checkpoints, savepoints,
high-availability storage and the FileSink rely on (a flush that reaches the DataNode, a
rename that replaces or raises, removal with the errors a local file system raises), and
the checkpoint storage writing, reading and deleting a job's checkpoints there, with state
handles that other processes open by their URL."""

from __future__ import annotations

import errno
import uuid

import fsspec
import pytest

from weir.core.checkpoint.storage import FileSystemCheckpointStorage, read_metadata_at, read_state
from weir.core.ids import JobId
from weir.core.webhdfs import WebHdfsFileSystem


@pytest.fixture
def root(hadoop) -> str:
    """A directory of this test's own in HDFS, as a webhdfs:// URL."""
    return hadoop.webhdfs_url(f"/tests/{uuid.uuid4().hex[:12]}")


def _fs(url: str) -> tuple[WebHdfsFileSystem, str]:
    fs, path = fsspec.core.url_to_fs(url)
    assert isinstance(fs, WebHdfsFileSystem)
    return fs, path


def test_a_flushed_file_is_in_hdfs_before_it_is_closed(root: str) -> None:
    # A FileSink's in-progress file is flushed at each checkpoint, which records its size:
    # after a failure those bytes must be in HDFS.
    fs, path = _fs(f"{root}/part-0.inprogress")
    with fs.open(path, "wb") as out:
        out.write(b"first line\n")
        out.flush()
        assert fs.cat_file(path) == b"first line\n"
        out.write(b"second line\n")
        out.flush()
        assert fs.size(path) == len(b"first line\nsecond line\n")
        out.write(b"third")
    assert fs.cat_file(path) == b"first line\nsecond line\nthird"


def test_a_rename_replaces_its_destination_and_a_missing_source_raises(root: str) -> None:
    fs, base = _fs(root)
    fs.pipe_file(f"{base}/a", b"new")
    fs.pipe_file(f"{base}/b", b"old")
    fs.mv(f"{root}/a", f"{root}/b")  # URLs or paths alike
    assert fs.cat_file(f"{base}/b") == b"new"
    assert not fs.exists(f"{base}/a")
    with pytest.raises(FileNotFoundError, match="rename source"):
        fs.mv(f"{base}/a", f"{base}/c")


def test_removal_raises_as_a_local_file_system_does(root: str) -> None:
    fs, base = _fs(root)
    fs.pipe_file(f"{base}/dir/file", b"x")
    with pytest.raises(OSError, match="not empty") as not_empty:
        fs.rm(f"{base}/dir")
    assert not_empty.value.errno == errno.ENOTEMPTY
    fs.rm(f"{base}/dir", recursive=True)
    assert not fs.exists(f"{base}/dir")
    with pytest.raises(FileNotFoundError):
        fs.rm(f"{base}/dir")


def test_paths_become_urls_naming_the_namenode(hadoop, root: str) -> None:
    fs, path = _fs(f"{root}/x")
    assert fs.unstrip_protocol(path) == f"{root}/x"
    assert fs.unstrip_protocol(path).startswith(f"webhdfs://{hadoop.webhdfs_address}/")


def test_checkpoints_are_written_read_and_deleted_in_hdfs(root: str) -> None:
    job_id = JobId(uuid.uuid4().hex)
    storage = FileSystemCheckpointStorage(root, job_id)
    location = storage.init_checkpoint(1)
    handle = location.write_state("op-0-keyed", b"keyed state" * 100, compress=True)
    assert str(handle.path).startswith(f"{root}/{job_id}/chk-1/")
    # Another process reads state by the handle's URL alone.
    assert read_state(handle) == b"keyed state" * 100
    pointer = storage.write_metadata(1, b"metadata of 1")
    assert pointer == f"{root}/{job_id}/chk-1/_metadata"
    assert read_metadata_at(f"{root}/{job_id}/chk-1") == b"metadata of 1"
    fs, base = _fs(root)
    assert [p.rsplit("/", 1)[1] for p in fs.ls(f"{base}/{job_id}/chk-1")] == [
        "_metadata",
        "op-0-keyed",
    ]  # the temporary _metadata was renamed, not left beside it

    shared = storage.write_shared_file("db-1-000001.sst", __file__)
    assert fs.exists(f"{base}/{job_id}/shared/db-1-000001.sst")
    storage.discard_shared([str(shared.path)])
    assert not fs.exists(f"{base}/{job_id}/shared/db-1-000001.sst")

    storage.init_checkpoint(2).write_state("op-0-keyed", b"unfinished")
    storage.discard_job(retain=True)  # keeps the completed checkpoint, drops the other
    assert fs.exists(f"{base}/{job_id}/chk-1/_metadata")
    assert not fs.exists(f"{base}/{job_id}/chk-2")
    storage.discard_checkpoint(1)
    assert not fs.exists(f"{base}/{job_id}/chk-1")
    storage.discard_job(retain=False)
    assert not fs.exists(f"{base}/{job_id}")
