"""Incremental checkpoints of the rocksdb backend: a RocksDB checkpoint whose SST files are
uploaded once into ``shared/`` and referred to by every later checkpoint that still has
them (Flink's ``RocksIncrementalSnapshotStrategy``), and restores from them.

Synchronous part (task thread): ``RocksDBNativeSnapshot.take`` creates a RocksDB
checkpoint in the backend's directory: memtables flushed, SST files hard-linked (they
never change), MANIFEST and CURRENT copied. Asynchronous part (the checkpoint writer
thread): ``write`` uploads the SST files not among those of the last *completed*
checkpoint (only those are known to be kept by the CheckpointCoordinator) and the
private files, then deletes the local checkpoint. The backend learns which files the
coordinator keeps from ``notify_checkpoint_complete``. Files go up, and come down on a
restore, ``state.backend.rocksdb.checkpoint.transfer.thread.num`` at a time (Flink's
``RocksDBStateUploader``/``Downloader``): on a remote file system each file costs round
trips whatever its size, and several at once overlap them.

Restore: a handle of exactly the backend's key groups becomes its database (the files
downloaded into its directory), and its shared files count as uploaded. Otherwise
(rescaling, or several handles) each handle is downloaded into a scratch directory and
the entries of the backend's key groups are copied, one contiguous range per column
family. A hashmap backend restoring such a handle gets its canonical form instead.
"""

from __future__ import annotations

import logging
import os
import shutil
import struct
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from rocksdict import Checkpoint, Rdict, WriteBatch

from weir.core.checkpoint import (
    CheckpointStorage,
    CheckpointStorageLocation,
    IncrementalKeyGroupsStateHandle,
    KeyGroupRange,
    SharedFile,
    StateMetaInfo,
    StreamStateHandle,
    read_state,
)
from weir.taskmanager.state.backend import (
    KeyedStateBackend,
    KeyedStateSnapshot,
    StateKind,
    StateMeta,
)
from weir.taskmanager.state.rocksdb import RocksDBKeyedStateBackend
from weir.taskmanager.state.rocksdb_layout import DEFAULT_CF, KEYS_CF, open_db

logger = logging.getLogger(__name__)

_U16 = struct.Struct(">H")
_SST = ".sst"
_COPY_BATCH = 10_000

T = TypeVar("T")


def transfer(work: Callable[[str], T], names: Sequence[str], threads: int) -> dict[str, T]:
    """``work(name)`` for each name, up to ``threads`` at a time; name -> its result. The
    first failure (in the order of ``names``) is raised once every transfer has ended, so
    no thread outlives the call."""
    if threads <= 1 or len(names) <= 1:
        return {name: work(name) for name in names}
    with ThreadPoolExecutor(
        min(threads, len(names)), thread_name_prefix="rocksdb-transfer"
    ) as pool:
        futures = {name: pool.submit(work, name) for name in names}
    return {name: future.result() for name, future in futures.items()}


def meta_infos(meta: dict[str, StateMeta]) -> tuple[StateMetaInfo, ...]:
    return tuple(
        StateMetaInfo(name, m.kind.value, m.serializer) for name, m in sorted(meta.items())
    )


def meta_of(infos: tuple[StateMetaInfo, ...]) -> dict[str, StateMeta]:
    return {i.name: StateMeta(StateKind(i.kind), i.serializer) for i in infos}


@dataclass(slots=True)
class RocksDBNativeSnapshot:
    """A RocksDB checkpoint on local disk, waiting to be uploaded."""

    checkpoint_id: int
    directory: str
    key_groups: range
    backend_id: str
    state_meta: tuple[StateMetaInfo, ...]
    uploaded: dict[str, StreamStateHandle]
    backend: RocksDBKeyedStateBackend
    written: dict[str, StreamStateHandle] = field(default_factory=dict)
    transfer_threads: int = 1

    @staticmethod
    def take(backend: RocksDBKeyedStateBackend, checkpoint_id: int) -> RocksDBNativeSnapshot:
        directory = os.path.join(backend.directory, f"chk-{checkpoint_id}-{uuid.uuid4().hex[:8]}")
        backend.flush()
        Checkpoint(backend.db).create_checkpoint(directory)
        return RocksDBNativeSnapshot(
            checkpoint_id=checkpoint_id,
            directory=directory,
            key_groups=backend.key_group_range,
            backend_id=backend.instance_id,
            state_meta=meta_infos(backend.table_meta()),
            uploaded=dict(backend.uploaded),
            backend=backend,
            transfer_threads=backend.transfer_threads,
        )

    def write(
        self, storage: CheckpointStorage, location: CheckpointStorageLocation, prefix: str
    ) -> IncrementalKeyGroupsStateHandle:
        """Upload what the coordinator does not have yet; returns the handle."""

        def upload(name: str) -> StreamStateHandle:
            path = os.path.join(self.directory, name)
            if name.endswith(_SST):
                # Named by checkpoint too: a file an aborted checkpoint uploaded may be
                # deleted by the coordinator while this one goes up.
                return storage.write_shared_file(
                    f"{self.backend_id}-{self.checkpoint_id}-{name}", path
                )
            with open(path, "rb") as f:
                data = f.read()
            return location.write_state(f"{prefix}-rocksdb-{name}", data)

        try:
            names = sorted(os.listdir(self.directory))
            new = [n for n in names if not (n.endswith(_SST) and n in self.uploaded)]
            handles = {**self.uploaded, **transfer(upload, new, self.transfer_threads)}
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)
        shared = [SharedFile(n, handles[n]) for n in names if n.endswith(_SST)]
        private = [SharedFile(n, handles[n]) for n in names if not n.endswith(_SST)]
        written = sum(handles[n].size for n in new)
        self.written.update((file.name, file.handle) for file in shared)
        self.backend.pending_uploads[self.checkpoint_id] = dict(self.written)
        start = self.key_groups.start
        return IncrementalKeyGroupsStateHandle(
            key_groups=KeyGroupRange(start, start + len(self.key_groups)),
            backend_id=self.backend_id,
            checkpoint_id=self.checkpoint_id,
            shared=tuple(shared),
            private=tuple(private),
            state_meta=self.state_meta,
            incremental_size=written,
        )

    def discard(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)


def _download(handle: IncrementalKeyGroupsStateHandle, directory: str, threads: int) -> None:
    os.makedirs(directory, exist_ok=True)
    files = {file.name: file.handle for file in (*handle.shared, *handle.private)}

    def download(name: str) -> None:
        with open(os.path.join(directory, name), "wb") as f:
            f.write(read_state(files[name]))

    transfer(download, sorted(files), threads)


def _families(handle: IncrementalKeyGroupsStateHandle) -> list[str]:
    return sorted({KEYS_CF, *(m.name for m in handle.state_meta)})


def restore_native(
    backend: KeyedStateBackend,
    handles: list[IncrementalKeyGroupsStateHandle],
    scratch_root: str,
) -> None:
    """Restore ``backend`` (before any record) from incremental handles."""
    if not handles:
        return
    if not isinstance(backend, RocksDBKeyedStateBackend):
        backend.restore([to_canonical(h, backend, scratch_root) for h in handles])
        return
    owned = backend.key_group_range
    for handle in handles:
        backend.restore_meta(meta_of(handle.state_meta))
    only = handles[0]
    if len(handles) == 1 and range(only.key_groups.start, only.key_groups.end) == owned:
        backend.close_db()
        shutil.rmtree(backend.db_path, ignore_errors=True)
        _download(only, backend.db_path, backend.transfer_threads)
        backend.reopen(_families(only))
        # The first checkpoint after the restore refers to these files in shared/.
        backend.uploaded = {f.name: f.handle for f in only.shared}
        logger.info(
            "restored rocksdb state of key groups %s from checkpoint %d (%d files)",
            owned,
            only.checkpoint_id,
            len(only.shared) + len(only.private),
        )
        return
    for handle in handles:
        scratch = os.path.join(scratch_root, f"restore-{uuid.uuid4().hex}")
        try:
            _download(handle, scratch, backend.transfer_threads)
            source = open_db(scratch, _families(handle))
            try:
                _copy_key_groups(source, handle, backend)
            finally:
                source.close()
        finally:
            shutil.rmtree(scratch, ignore_errors=True)


def _copy_key_groups(
    source: Rdict, handle: IncrementalKeyGroupsStateHandle, target: RocksDBKeyedStateBackend
) -> None:
    """Copy the entries of the target's key groups, one range scan per column family."""
    owned = target.key_group_range
    low = max(owned.start, handle.key_groups.start)
    high = min(owned.stop, handle.key_groups.end)
    if low >= high:
        return
    start, stop = _U16.pack(low), _U16.pack(high)
    db = target.db
    for name in _families(handle):
        if name == DEFAULT_CF:
            continue
        target.column_family_for_restore(name)
        cf_handle = db.get_column_family_handle(name)
        it = source.get_column_family(name).iter()
        it.seek(start)
        batch = WriteBatch(raw_mode=True)
        while it.valid():
            key = it.key()
            if key >= stop:
                break
            batch.put(key, it.value(), cf_handle)
            if batch.len() >= _COPY_BATCH:
                db.write(batch, target.write_options)
                batch = WriteBatch(raw_mode=True)
            it.next()
        if batch.len():
            db.write(batch, target.write_options)


def to_canonical(
    handle: IncrementalKeyGroupsStateHandle, like: KeyedStateBackend, scratch_root: str
) -> KeyedStateSnapshot:
    """The canonical form of an incremental handle (what another backend restores)."""
    scratch = os.path.join(scratch_root, f"canonical-{uuid.uuid4().hex}")
    reader = RocksDBKeyedStateBackend(
        like.max_parallelism,
        range(handle.key_groups.start, handle.key_groups.end),
        scratch,
        like.key_hasher,
    )
    try:
        restore_native(reader, [handle], scratch_root)
        return reader.snapshot()
    finally:
        reader.dispose()


def native_snapshot_of(backend: Any, checkpoint_id: int) -> RocksDBNativeSnapshot | None:
    """The incremental snapshot to take of ``backend``, or None for a full one."""
    if isinstance(backend, RocksDBKeyedStateBackend) and backend.incremental:
        return RocksDBNativeSnapshot.take(backend, checkpoint_id)
    return None
