"""s3:// on a real MinIO server (tests/minio_server.py; the shared one, or a test's own where
it counts the unfinished uploads on the server's disk), without a job: the checkpoint storage
writing, reading and deleting a job's checkpoints there (``_metadata`` in one PUT, a
write check that names the bucket), and the FileSink's part files as multipart uploads:
nothing visible before its commit, a restore that commits exactly the checkpointed bytes
of a part file spanning several uploaded parts (also when run again), and nothing
unfinished left after it."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
from minio_server import MinioServer

from weir.core import s3_settings
from weir.core.checkpoint.storage import FileSystemCheckpointStorage, read_metadata_at, read_state
from weir.core.ids import JobId
from weir.core.s3_file_system import (
    S3AccessDeniedError,
    S3BucketNotFoundError,
    S3CredentialsError,
    S3FileSystem,
)
from weir.datastream.connectors._file_writer import FileWriter
from weir.datastream.connectors.file_system import RollingPolicy

MIB = 1 << 20


@pytest.fixture
def bucket(minio) -> str:
    s3_settings.configure(minio.config())
    return minio.new_bucket("storage")


@pytest.fixture
def server(tmp_path) -> Iterator[MinioServer]:
    """A MinIO server of the test's own: nothing but the test makes uploads there."""
    with MinioServer(tmp_path / "minio") as own:
        s3_settings.configure(own.config())
        yield own


def test_checkpoint_storage_writes_reads_and_discards_on_s3(minio, bucket) -> None:
    storage = FileSystemCheckpointStorage(f"s3://{bucket}/checkpoints", JobId("cd" * 16))
    assert isinstance(storage._fs, S3FileSystem)
    storage.check_writable()
    location = storage.init_checkpoint(1)
    handle = location.write_state("op-0-keyed", b"state bytes" * 100, compress=True)
    assert handle.path.startswith(f"s3://{bucket}/checkpoints/{'cd' * 16}/chk-1/")
    shared = storage.write_shared_file("db-1-000001.sst", __file__)
    pointer = storage.write_metadata(1, b"metadata bytes")
    assert pointer == f"s3://{bucket}/checkpoints/{'cd' * 16}/chk-1/_metadata"
    assert read_metadata_at(pointer.rsplit("/", 1)[0]) == b"metadata bytes"
    assert read_state(handle) == b"state bytes" * 100
    storage.check_exists(shared)
    fs = minio.file_system()
    # One PUT of _metadata: nothing was written beside it and renamed.
    assert sorted(
        p.rsplit("/", 1)[-1] for p in fs.ls(f"{bucket}/checkpoints/{'cd' * 16}/chk-1")
    ) == [
        "_metadata",
        "op-0-keyed",
    ]
    storage.discard_checkpoint(1)
    assert not storage.checkpoint_exists(1)
    storage.discard_job(retain=False)
    assert fs.find(f"{bucket}/checkpoints") == []


def test_a_missing_bucket_is_named_and_never_created(minio) -> None:
    s3_settings.configure(minio.config())
    missing = f"missing-{uuid.uuid4().hex[:8]}"
    storage = FileSystemCheckpointStorage(f"s3://{missing}/checkpoints", JobId("ef" * 16))
    # The JobMaster's write check and the coordinator's first request: neither creates it.
    with pytest.raises(S3BucketNotFoundError, match=f"no bucket '{missing}'"):
        storage.check_writable()
    with pytest.raises(S3BucketNotFoundError, match=f"no bucket '{missing}'"):
        storage.initialize_base_locations()
    assert not minio.file_system().exists(missing)


def test_a_read_only_bucket_fails_the_write_check_naming_bucket_and_key(minio, bucket) -> None:
    key, secret, token = minio.read_only_credentials(bucket)
    s3_settings.configure(
        {"s3.access-key": key, "s3.secret-key": secret, "s3.session.token": token}
    )
    try:
        storage = FileSystemCheckpointStorage(f"s3://{bucket}/checkpoints", JobId("ab" * 16))
        with pytest.raises(S3AccessDeniedError) as denied:
            storage.check_writable()
    finally:
        s3_settings.configure(minio.config())
    message = str(denied.value)
    assert f"s3://{bucket}/checkpoints/{'ab' * 16}/.write-check-" in message
    assert "AccessDenied" in message and f"bucket '{bucket}'" in message


def _writer(base: str, policy=None) -> FileWriter:
    return FileWriter(
        base,
        "part",
        ".bin",
        policy or RollingPolicy.default_rolling_policy(part_size=1 << 40),
        clock=lambda: 0,
    )


def _visible(fs, prefix: str) -> dict[str, bytes]:
    return {p: fs.cat_file(p) for p in fs.find(prefix) if not p.rsplit("/", 1)[-1].startswith(".")}


def _hidden(fs, prefix: str) -> list[str]:
    return [p for p in fs.find(prefix) if p.rsplit("/", 1)[-1].startswith(".")]


def test_a_restore_commits_exactly_the_checkpointed_bytes_of_a_multipart_part_file(
    server,
) -> None:
    fs = server.file_system()
    bucket = server.new_bucket("restore")
    base = f"s3://{bucket}/out"
    first = os.urandom(12 * MIB + 12345)  # two whole 5 MiB parts and a tail
    later = os.urandom(7 * MIB)  # a third part and more, after the checkpoint
    writer = _writer(base)
    for offset in range(0, len(first), 64 * 1024):
        writer.write("", None, first[offset : offset + 64 * 1024], 0)
    state = writer.snapshot(1)
    writer.write("", None, later, 0)
    writer.snapshot(2)  # never completes
    writer.close()  # the task dies: nothing committed
    assert _visible(fs, f"{bucket}/out") == {}
    assert len(server.unfinished_uploads()) == 1  # the upload waits for a restore

    for _ in range(2):  # restoring the same checkpoint again changes nothing
        restored = _writer(base)
        restored.restore([state])
        restored.close()
        (data,) = _visible(fs, f"{bucket}/out").values()
        assert data == first
        assert _hidden(fs, f"{bucket}/out") == []
        assert server.unfinished_uploads() == []


def test_a_rolled_part_file_shows_only_once_its_checkpoint_completes(server) -> None:
    fs = server.file_system()
    bucket = server.new_bucket("roll")
    writer = _writer(f"s3://{bucket}/out", RollingPolicy.on_checkpoint_rolling_policy())
    writer.write("", None, b"a line\n", 0)
    writer.snapshot(1)  # rolled: pending, its upload complete but for the commit
    assert _visible(fs, f"{bucket}/out") == {}
    writer.commit_up_to(1)
    assert list(_visible(fs, f"{bucket}/out").values()) == [b"a line\n"]
    assert _hidden(fs, f"{bucket}/out") == []
    assert server.unfinished_uploads() == []
    writer.close()


def test_a_restarted_attempt_without_a_checkpoint_drops_what_earlier_attempts_left(
    server,
) -> None:
    fs = server.file_system()
    bucket = server.new_bucket("restart")
    uid = str(uuid.uuid4())
    crashed = _writer(f"s3://{bucket}/out")
    crashed.start_fresh(uid, discard_leftovers=False)
    crashed.write("", None, os.urandom(6 * MIB), 0)  # one part uploaded
    crashed.snapshot(1)  # a tail put aside for a checkpoint that never completes
    crashed.close()
    assert server.unfinished_uploads() and _hidden(fs, f"{bucket}/out")
    restarted = _writer(f"s3://{bucket}/out")
    restarted.start_fresh(uid, discard_leftovers=True)
    assert server.unfinished_uploads() == []
    assert _hidden(fs, f"{bucket}/out") == []
    restarted.close()


def test_a_restore_aborts_the_upload_a_part_file_started_when_it_rolled_after_the_checkpoint(
    server,
) -> None:
    fs = server.file_system()
    bucket = server.new_bucket("rolled")
    writer = _writer(f"s3://{bucket}/out")
    writer.write("", None, b"before the checkpoint\n", 0)
    state = writer.snapshot(1)  # in progress: its bytes put aside, no upload yet
    writer.write("", None, b"after it\n", 0)
    writer.finish()  # rolled: its upload started and got its last part
    writer.snapshot(2)  # never completes
    writer.close()
    assert len(server.unfinished_uploads()) == 1
    restored = _writer(f"s3://{bucket}/out")
    restored.restore([state])
    restored.close()
    assert list(_visible(fs, f"{bucket}/out").values()) == [b"before the checkpoint\n"]
    assert _hidden(fs, f"{bucket}/out") == []
    assert server.unfinished_uploads() == []


def test_a_writer_closed_without_a_snapshot_aborts_its_uploads_and_keeps_what_one_holds(
    server,
) -> None:
    """A task that fails, or a deposed leader's task, closes its writer without finishing:
    part files no snapshot holds go (their uploads aborted), those a snapshot holds stay
    for the restore that completes them."""
    fs = server.file_system()
    bucket = server.new_bucket("closed")
    writer = _writer(f"s3://{bucket}/out")
    writer.write("a", None, os.urandom(6 * MIB), 0)  # one part uploaded
    state = writer.snapshot(1)
    writer.write("b", None, os.urandom(6 * MIB), 0)  # another part file, in no snapshot
    assert len(server.unfinished_uploads()) == 2
    writer.close()
    assert len(server.unfinished_uploads()) == 1
    hidden = _hidden(fs, f"{bucket}/out")
    assert hidden and all(p.startswith(f"{bucket}/out/a/") for p in hidden)
    restored = _writer(f"s3://{bucket}/out")
    restored.restore([state])
    restored.close()
    assert [p.rsplit("/", 2)[-2] for p in _visible(fs, f"{bucket}/out")] == ["a"]
    assert _hidden(fs, f"{bucket}/out") == []
    assert server.unfinished_uploads() == []


def test_credentials_from_the_aws_environment_variables_reach_the_bucket(
    minio, bucket, monkeypatch
) -> None:
    """No s3.* key set: the AWS SDK's environment variables give endpoint and credentials."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", minio.endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", minio.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", minio.secret_key)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    unset = {"s3.endpoint": "", "s3.access-key": "", "s3.secret-key": "", "s3.session.token": ""}
    s3_settings.configure(unset)
    try:
        storage = FileSystemCheckpointStorage(f"s3://{bucket}/env", JobId("12" * 16))
        storage.check_writable()
        pointer = storage.write_metadata(1, b"from the environment")
        assert read_metadata_at(pointer.rsplit("/", 1)[0]) == b"from the environment"
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
        S3FileSystem.clear_instance_cache()
        with pytest.raises(S3CredentialsError):
            FileSystemCheckpointStorage(f"s3://{bucket}/env", JobId("34" * 16)).check_writable()
    finally:
        s3_settings.configure(minio.config())
