"""Checkpoint storage: layout, checksums, compression, atomic _metadata, discarding."""

from __future__ import annotations

import errno
import uuid

import fsspec
import pytest
from fsspec.implementations.memory import MemoryFileSystem

from weir.core.checkpoint import (
    FileSystemCheckpointStorage,
    JobManagerCheckpointStorage,
    create_checkpoint_storage,
    read_metadata_at,
    read_state,
)
from weir.core.config import validate
from weir.core.errors import CheckpointError, ConfigurationError, CorruptCheckpointError
from weir.core.ids import JobId

JOB = JobId("a" * 32)


@pytest.fixture(params=["file", "memory"])
def checkpoints_dir(request, tmp_path):
    if request.param == "file":
        yield f"file://{tmp_path}/checkpoints"
        return
    root = f"memory://weir-test-{uuid.uuid4().hex}"
    yield root
    fs = fsspec.filesystem("memory")
    if fs.exists(root):
        fs.rm(root, recursive=True)


def _ls(url: str) -> set[str]:
    fs, path = fsspec.core.url_to_fs(url)
    return {str(p).rstrip("/").rsplit("/", 1)[-1] for p in fs.ls(path, detail=False)}


class TestFileSystemCheckpointStorage:
    def test_layout_is_job_dir_with_chk_shared_and_taskowned(self, checkpoints_dir):
        storage = FileSystemCheckpointStorage(checkpoints_dir, JOB)
        storage.initialize_base_locations()
        location = storage.init_checkpoint(3)
        location.write_state("op1-0-keyed", b"state")
        storage.write_metadata(3, b"meta")
        job_url = f"{checkpoints_dir}/{JOB}"
        assert _ls(job_url) == {"chk-3", "shared", "taskowned"}
        assert _ls(f"{job_url}/chk-3") == {"_metadata", "op1-0-keyed"}

    def test_a_task_resolves_the_location_and_creates_nothing(self, checkpoints_dir):
        coordinator = FileSystemCheckpointStorage(checkpoints_dir, JOB)
        task = FileSystemCheckpointStorage(checkpoints_dir, JOB)
        assert task.resolve_checkpoint(3).directory.endswith(f"{JOB}/chk-3")
        fs, path = fsspec.core.url_to_fs(f"{checkpoints_dir}/{JOB}")
        assert not fs.exists(path)
        coordinator.init_checkpoint(3)
        handle = task.resolve_checkpoint(3).write_state("op-0-keyed", b"state")
        assert read_state(handle) == b"state"

    def test_state_below_the_inline_threshold_goes_into_the_metadata(self, checkpoints_dir):
        storage = FileSystemCheckpointStorage(checkpoints_dir, JOB, data_inline_threshold=100)
        location = storage.init_checkpoint(1)
        small = location.write_state("op-0-keyed", b"s" * 99)
        large = location.write_state("op-1-keyed", b"l" * 100)
        compressed = location.write_state("op-2-keyed", b"c" * 1000, compress=True)
        assert small.path is None and small.inline == b"s" * 99
        assert large.path is not None and large.inline is None
        # What is compared is the size as stored: 1000 bytes that lz4 makes small stay inline.
        assert compressed.path is None and compressed.compressed
        assert [read_state(h) for h in (small, large, compressed)] == [
            b"s" * 99,
            b"l" * 100,
            b"c" * 1000,
        ]
        assert _ls(f"{checkpoints_dir}/{JOB}/chk-1") == {"op-1-keyed"}

    def test_the_inline_threshold_comes_from_flinks_key_or_its_old_name(self):
        def threshold(config):
            storage = create_checkpoint_storage(
                {"execution.checkpointing.dir": "memory://t", **config}, JOB
            )
            assert isinstance(storage, FileSystemCheckpointStorage)
            return storage.data_inline_threshold

        assert threshold({}) == 20 * 1024
        assert threshold({"execution.checkpointing.data-inline-threshold": "1 kb"}) == 1024
        assert threshold({"state.storage.fs.memory-threshold": "0"}) == 0
        with pytest.raises(ConfigurationError, match="data-inline-threshold"):
            validate({"execution.checkpointing.data-inline-threshold": "2 mb"})

    @pytest.mark.parametrize("compress", [False, True])
    def test_state_round_trips_with_checksum(self, checkpoints_dir, compress):
        storage = FileSystemCheckpointStorage(checkpoints_dir, JOB)
        data = b"0123456789" * 1000
        handle = storage.init_checkpoint(1).write_state("s", data, compress=compress)
        assert handle.compressed is compress
        assert handle.path is not None and handle.path.startswith(checkpoints_dir.split("://")[0])
        if compress:
            assert handle.size < len(data)
        assert storage.read_state(handle) == data
        assert read_state(handle) == data

    @pytest.mark.parametrize("compress", [False, True])
    @pytest.mark.parametrize("threshold", [0, 100_000], ids=["file", "inline"])
    def test_state_written_in_parts_is_the_bytes_joined(self, checkpoints_dir, compress, threshold):
        storage = FileSystemCheckpointStorage(checkpoints_dir, JOB, data_inline_threshold=threshold)
        parts = [bytes([i]) * (100 * i) for i in range(1, 40)]
        location = storage.init_checkpoint(1)
        in_parts = location.write_state("parts", parts, compress=compress)
        whole = location.write_state("whole", b"".join(parts), compress=compress)
        assert (in_parts.path is None) == (threshold > 0)
        assert (in_parts.size, in_parts.checksum) == (whole.size, whole.checksum)
        assert read_state(in_parts) == b"".join(parts)

    def test_a_flipped_byte_is_caught_and_the_file_named(self, checkpoints_dir):
        storage = FileSystemCheckpointStorage(checkpoints_dir, JOB)
        handle = storage.init_checkpoint(1).write_state("s", b"hello world", compress=False)
        fs, path = fsspec.core.url_to_fs(handle.path)
        data = bytearray(fs.cat_file(path))
        data[4] ^= 0x01
        fs.pipe_file(path, bytes(data))
        with pytest.raises(CorruptCheckpointError, match="corrupt") as err:
            storage.read_state(handle)
        assert err.value.path == handle.path
        assert handle.path in str(err.value)

    def test_a_missing_file_is_a_corrupt_checkpoint(self, checkpoints_dir):
        storage = FileSystemCheckpointStorage(checkpoints_dir, JOB)
        handle = storage.init_checkpoint(1).write_state("s", b"x")
        storage.discard_checkpoint(1)
        with pytest.raises(CorruptCheckpointError, match="missing"):
            storage.read_state(handle)
        with pytest.raises(CorruptCheckpointError):
            storage.check_exists(handle)

    def test_metadata_is_read_from_the_dir_or_the_file(self, checkpoints_dir):
        storage = FileSystemCheckpointStorage(checkpoints_dir, JOB)
        pointer = storage.write_metadata(7, b"the metadata")
        assert pointer.endswith("/chk-7/_metadata")
        chk_dir = pointer.rsplit("/", 1)[0]
        assert storage.read_metadata(pointer) == b"the metadata"
        assert storage.read_metadata(chk_dir) == b"the metadata"
        assert storage.read_metadata(chk_dir + "/") == b"the metadata"
        assert read_metadata_at(chk_dir) == b"the metadata"
        with pytest.raises(CorruptCheckpointError, match="chk-8"):
            storage.read_metadata(chk_dir.replace("chk-7", "chk-8"))

    def test_discard_checkpoint_deletes_its_dir_and_is_idempotent(self, checkpoints_dir):
        storage = FileSystemCheckpointStorage(checkpoints_dir, JOB)
        storage.initialize_base_locations()
        storage.init_checkpoint(1).write_state("s", b"x")
        storage.init_checkpoint(2).write_state("s", b"y")
        storage.discard_checkpoint(1)
        storage.discard_checkpoint(1)
        assert _ls(f"{checkpoints_dir}/{JOB}") == {"chk-2", "shared", "taskowned"}

    def test_discard_checkpoint_removes_what_a_task_writes_during_the_removal(
        self, tmp_path, monkeypatch
    ):
        storage = FileSystemCheckpointStorage(f"file://{tmp_path}", JOB)
        storage.initialize_base_locations()
        location = storage.init_checkpoint(1)
        location.write_state("s", b"x")
        fs = storage._fs
        remove = fs.rm
        late_writes = []

        def rm_while_a_task_writes(path, recursive=False):
            if not late_writes:
                # A task's writer thread puts a file in between the listing and rmdir.
                late_writes.append(location.write_state("late", b"y"))
                raise OSError(errno.ENOTEMPTY, "Directory not empty", path)
            return remove(path, recursive=recursive)

        monkeypatch.setattr(fs, "rm", rm_while_a_task_writes)  # fsspec shares the instance
        storage.discard_checkpoint(1)
        assert late_writes
        assert _ls(f"file://{tmp_path}/{JOB}") == {"shared", "taskowned"}

    def test_discard_job_without_retain_deletes_everything(self, checkpoints_dir):
        storage = FileSystemCheckpointStorage(checkpoints_dir, JOB)
        storage.init_checkpoint(1).write_state("s", b"x")
        storage.write_metadata(1, b"m")
        storage.discard_job(retain=False)
        fs, path = fsspec.core.url_to_fs(f"{checkpoints_dir}/{JOB}")
        assert not fs.exists(path)

    def test_discard_job_with_retain_keeps_completed_and_drops_unfinished(self, checkpoints_dir):
        storage = FileSystemCheckpointStorage(checkpoints_dir, JOB)
        storage.initialize_base_locations()
        storage.init_checkpoint(1).write_state("s", b"x")
        storage.write_metadata(1, b"m")
        storage.init_checkpoint(2).write_state("s", b"y")  # never completed
        storage.discard_job(retain=True)
        assert _ls(f"{checkpoints_dir}/{JOB}") == {"chk-1", "shared", "taskowned"}

    def test_state_names_cannot_escape_or_shadow_metadata(self, checkpoints_dir):
        location = FileSystemCheckpointStorage(checkpoints_dir, JOB).init_checkpoint(1)
        for bad in ("../x", "a/b", "_metadata", ".hidden", ""):
            with pytest.raises(CheckpointError, match="bad state file name"):
                location.write_state(bad, b"x")

    def test_needs_a_directory(self):
        with pytest.raises(ConfigurationError, match=r"execution\.checkpointing\.dir"):
            FileSystemCheckpointStorage("", JOB)


class _ObservingMemoryFileSystem(MemoryFileSystem):
    """Records, at every step, what a concurrent reader of `_metadata` would see."""

    protocol = "observedmem"
    seen: list[bytes | None]
    fail_rename = False

    def _observe(self) -> None:
        target = next((p for p in self.store if p.endswith("/_metadata")), None)
        self.seen.append(bytes(self.store[target].getvalue()) if target else None)

    def _open(self, path, mode="rb", **kwargs):
        if "w" in mode:
            assert not path.endswith("/_metadata"), "_metadata must never be written in place"
        f = super()._open(path, mode, **kwargs)
        if "w" in mode:
            original_write = f.write

            def write(data):
                self._observe()
                n = original_write(data)
                self._observe()
                return n

            f.write = write
        return f

    def mv(self, path1, path2, *args, **kwargs):
        self._observe()
        if self.fail_rename:
            raise OSError("rename failed")
        super().mv(path1, path2, *args, **kwargs)
        self._observe()


@pytest.fixture
def observed_fs():
    fsspec.register_implementation("observedmem", _ObservingMemoryFileSystem, clobber=True)
    _ObservingMemoryFileSystem.seen = []
    _ObservingMemoryFileSystem.fail_rename = False
    _ObservingMemoryFileSystem.store = {}
    _ObservingMemoryFileSystem.pseudo_dirs = [""]
    yield _ObservingMemoryFileSystem
    _ObservingMemoryFileSystem.store = {}


class TestAtomicMetadata:
    def test_a_reader_sees_no_metadata_or_all_of_it(self, observed_fs):
        storage = FileSystemCheckpointStorage("observedmem://ckpt", JOB)
        payload = b"M" * 100_000
        storage.write_metadata(1, payload)
        assert observed_fs.seen, "the write was not observed"
        assert all(seen in (None, payload) for seen in observed_fs.seen)
        assert observed_fs.seen[-1] == payload
        assert _ls(f"observedmem://ckpt/{JOB}/chk-1") == {"_metadata"}

    def test_a_failed_rename_leaves_no_metadata_and_no_temp_file(self, observed_fs):
        storage = FileSystemCheckpointStorage("observedmem://ckpt", JOB)
        storage.init_checkpoint(1)
        observed_fs.fail_rename = True
        with pytest.raises(OSError, match="rename failed"):
            storage.write_metadata(1, b"meta")
        assert all(seen is None for seen in observed_fs.seen)
        assert _ls(f"observedmem://ckpt/{JOB}/chk-1") == set()


class TestJobManagerCheckpointStorage:
    def test_state_is_inline_and_checked(self):
        storage = JobManagerCheckpointStorage(JOB)
        handle = storage.init_checkpoint(1).write_state("s", b"abc" * 100, compress=True)
        assert handle.path is None and handle.inline is not None
        assert storage.read_state(handle) == b"abc" * 100
        corrupt = type(handle)(
            path=None,
            size=handle.size,
            checksum=handle.checksum,
            compressed=True,
            inline=b"\x00" * handle.size,
        )
        with pytest.raises(CorruptCheckpointError, match="inline"):
            storage.read_state(corrupt)

    def test_state_in_parts_is_inline_and_checked(self):
        location = JobManagerCheckpointStorage(JOB).init_checkpoint(1)
        handle = location.write_state("s", [b"ab", b"", b"cd"])
        assert read_state(handle) == b"abcd"

    def test_state_over_the_limit_is_refused_with_advice(self):
        location = JobManagerCheckpointStorage(JOB, max_state_size=10).init_checkpoint(4)
        with pytest.raises(CheckpointError, match=r"checkpoint 4.*limit of 10 bytes.*filesystem"):
            location.write_state("big", b"x" * 11)

    def test_metadata_in_memory(self):
        storage = JobManagerCheckpointStorage(JOB)
        pointer = storage.write_metadata(2, b"meta")
        assert pointer.startswith("jobmanager://")
        assert storage.read_metadata(pointer) == b"meta"
        storage.discard_checkpoint(2)
        with pytest.raises(CorruptCheckpointError, match="not in this JobMaster's memory"):
            storage.read_metadata(pointer)

    def test_metadata_in_files_when_a_directory_is_set(self, checkpoints_dir):
        storage = JobManagerCheckpointStorage(JOB, checkpoints_dir)
        pointer = storage.write_metadata(2, b"meta")
        assert pointer.endswith(f"{JOB}/chk-2/_metadata")
        assert storage.read_metadata(pointer) == b"meta"
        storage.discard_job(retain=False)
        with pytest.raises(CorruptCheckpointError):
            storage.read_metadata(pointer)


def test_factory_picks_the_storage_from_the_config(tmp_path):
    assert isinstance(create_checkpoint_storage({}, JOB), JobManagerCheckpointStorage)
    url = f"file://{tmp_path}"
    assert isinstance(
        create_checkpoint_storage({"execution.checkpointing.dir": url}, JOB),
        FileSystemCheckpointStorage,
    )
    deprecated = create_checkpoint_storage({"state.checkpoints.dir": url}, JOB)
    assert isinstance(deprecated, FileSystemCheckpointStorage)
    assert deprecated.job_url == f"file://{tmp_path}/{JOB}"
    jm = create_checkpoint_storage(
        {"execution.checkpointing.dir": url, "execution.checkpointing.storage": "jobmanager"}, JOB
    )
    assert isinstance(jm, JobManagerCheckpointStorage)
    with pytest.raises(ConfigurationError, match=r"execution\.checkpointing\.dir"):
        create_checkpoint_storage({"execution.checkpointing.storage": "filesystem"}, JOB)


def test_a_metadata_dir_keeps_jobmanager_checkpoints_for_the_next_leader(checkpoints_dir):
    """Under high availability a JobMaster's in-memory checkpoints are written to the HA
    storage directory: another JobMaster (the next leader) reads them back."""
    storage = create_checkpoint_storage({}, JOB, metadata_dir=checkpoints_dir)
    assert isinstance(storage, JobManagerCheckpointStorage)
    location = storage.init_checkpoint(3)
    handle = location.write_state("s", b"state")
    assert handle.inline is not None  # the state still travels inline, with the metadata
    pointer = storage.write_metadata(3, b"meta with inline state")
    assert not pointer.startswith("jobmanager://")
    next_leader = create_checkpoint_storage({}, JOB, metadata_dir=checkpoints_dir)
    assert next_leader.read_metadata(pointer) == b"meta with inline state"
    # A directory of the job's own wins over the HA directory.
    own = create_checkpoint_storage(
        {"execution.checkpointing.dir": f"{checkpoints_dir}/own"}, JOB, metadata_dir="x"
    )
    assert f"/own/{JOB}/chk-1/" in own.write_metadata(1, b"m")
