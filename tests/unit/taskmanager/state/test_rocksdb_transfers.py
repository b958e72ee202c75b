"""Incremental rocksdb checkpoints move their files ``transfer_threads`` at a time (Flink's
``state.backend.rocksdb.checkpoint.transfer.thread.num``), over a real RocksDB and a local
checkpoint directory; what is uploaded and restored is the same as one at a time."""

from __future__ import annotations

import threading

import pytest

from weir.core.checkpoint import FileSystemCheckpointStorage
from weir.core.ids import JobId
from weir.taskmanager.state.rocksdb import RocksDBKeyedStateBackend
from weir.taskmanager.state.rocksdb_incremental import (
    RocksDBNativeSnapshot,
    restore_native,
    transfer,
)

# Generous: the barrier opens as soon as every upload has arrived; only uploads that never
# overlap wait this long (and then the test fails).
_BARRIER_TIMEOUT_S = 30.0


class MeetingStorage(FileSystemCheckpointStorage):
    """Each SST upload waits until ``parties`` uploads are in progress at once."""

    def __init__(self, directory: str, parties: int) -> None:
        super().__init__(directory, JobId("r" * 32))
        self.barrier = threading.Barrier(parties, timeout=_BARRIER_TIMEOUT_S)

    def write_shared_file(self, name, local_path):
        self.barrier.wait()
        return super().write_shared_file(name, local_path)


def _backend_with_sst_files(tmp_path, name: str, files: int) -> RocksDBKeyedStateBackend:
    backend = RocksDBKeyedStateBackend(128, range(128), str(tmp_path / name))
    backend.incremental = True
    for round_ in range(files):  # one flush, one new SST file
        for key in range(round_ * 50, round_ * 50 + 50):
            backend.current_key = key
            backend.get_value_state("count").update(key * 10)
        backend.flush()
        for column_family in backend._cfs.values():  # memtables to SST files
            column_family.flush()
    return backend


def _counts(backend: RocksDBKeyedStateBackend, keys: range) -> dict[int, int]:
    found = {}
    for key in keys:
        backend.current_key = key
        found[key] = backend.get_value_state("count").value()
    return found


@pytest.mark.parametrize("threads", [1, 4])
def test_an_incremental_checkpoint_uploads_and_restores_the_same_files(tmp_path, threads):
    backend = _backend_with_sst_files(tmp_path, "before", 3)
    backend.transfer_threads = threads
    storage = FileSystemCheckpointStorage(f"file://{tmp_path / 'chk'}", JobId("r" * 32))
    storage.initialize_base_locations()
    snapshot = RocksDBNativeSnapshot.take(backend, 1)
    handle = snapshot.write(storage, storage.init_checkpoint(1), "op-0")
    assert len(handle.shared) >= 3
    assert [f.name for f in handle.shared] == sorted(f.name for f in handle.shared)
    assert {f.name for f in handle.private} >= {"CURRENT"}
    assert handle.incremental_size == sum(f.handle.size for f in (*handle.shared, *handle.private))

    restored = RocksDBKeyedStateBackend(128, range(128), str(tmp_path / "after"))
    restored.transfer_threads = threads
    restore_native(restored, [handle], str(tmp_path / "scratch"))
    assert _counts(restored, range(150)) == {key: key * 10 for key in range(150)}
    backend.dispose()
    restored.dispose()


def test_sst_files_go_up_at_once(tmp_path):
    backend = _backend_with_sst_files(tmp_path, "db", 3)
    backend.transfer_threads = 4
    snapshot = RocksDBNativeSnapshot.take(backend, 1)
    storage = MeetingStorage(f"file://{tmp_path / 'chk'}", parties=3)
    storage.initialize_base_locations()
    handle = snapshot.write(storage, storage.init_checkpoint(1), "op-0")  # no BrokenBarrierError
    assert len(handle.shared) == 3
    backend.dispose()


def test_a_failed_transfer_raises_once_every_other_one_ended():
    ended = []

    def work(name: str) -> str:
        if name == "b":
            msg = "upload of b failed"
            raise OSError(msg)
        ended.append(name)
        return name.upper()

    assert transfer(work, ["a", "c"], threads=4) == {"a": "A", "c": "C"}
    ended.clear()
    with pytest.raises(OSError, match="upload of b failed"):
        transfer(work, ["a", "b", "c", "d"], threads=2)
    assert sorted(ended) == ["a", "c", "d"]
    assert not [t for t in threading.enumerate() if t.name.startswith("rocksdb-transfer")]
