"""The ``rocksdb`` state backend: keyed state in an embedded RocksDB (rocksdict, raw bytes).

One column family per table (a state, a TTL state's ``_weir_ttl_<name>``, a runtime
table). Every entry key starts with the serialized key::

    key group (u16) | length of the key | canonical_key_bytes(key) | namespace ...

so all state of a key-group range is one contiguous scan, and all entries of one key
(a map's user keys, a table's namespaces) are one prefix scan. The length is a u16, or
0xFFFF and a u32 from 64 KiB on: a key may be of any size, as on the hashmap backend.
A key is serialized by its canonical form (``weir.core.canonical_keys``): keys that are
equal in Python are the same entry, as they are the same dict key on the hashmap
backend. Keys whose canonical form is not the key itself (1.0, dataclasses, Rows) also
keep their original, pickled, in the ``_weir_keys`` column family, so timers and
snapshots hand back the key the program used.

The write-ahead log is off: state is made durable by checkpoints, never by RocksDB's
own recovery (as in Flink). The database lives in a directory of its own under
``taskmanager.state.local.root-dirs`` and is deleted when the backend is disposed.

Snapshots: ``snapshot()`` gives the canonical form (a full snapshot, what any backend
restores); with incremental checkpoints the task takes ``snapshot_native()`` instead,
a RocksDB checkpoint whose SST files are uploaded once and shared by later
checkpoints (``weir.taskmanager.state.rocksdb_incremental``).
"""

from __future__ import annotations

import logging
import os
import shutil
import uuid
from collections.abc import Callable
from typing import Any

from rocksdict import (
    Rdict,
    WriteBatch,
    WriteOptions,
)

from weir.core.canonical_keys import canonical_key_bytes, is_canonical
from weir.core.errors import ConfigurationError
from weir.core.key_groups import PyFlinkKeyHasher
from weir.taskmanager.state.backend import (
    KeyedStateBackend,
    KeyedStateSnapshot,
    StateKind,
    StateMeta,
    check_registration,
    ttl_table,
    with_columns_as_entries,
)
from weir.taskmanager.state.rocksdb_blocks import (
    blocks_table,
    blocks_target,
    canonical_block_entries,
    fold_blocks,
)
from weir.taskmanager.state.rocksdb_cache import WriteBackColumnFamily
from weir.taskmanager.state.rocksdb_layout import (
    DEFAULT_CF,
    KEYS_CF,
    block_cache,
    canonical_entries,
    db_options,
    decode_key,
    entries_of,
    holds_prefix,
    open_db,
    pickle_key,
    scan_by_key,
    serialized_key,
)
from weir.taskmanager.state.rocksdb_states import (
    RocksAggregatingState,
    RocksEntry,
    RocksListEntry,
    RocksListState,
    RocksMapEntries,
    RocksMapState,
    RocksNamespacedTable,
    RocksReducingState,
    RocksValueState,
)

logger = logging.getLogger(__name__)


# A restore writes this many entries per WriteBatch: big enough that the batch call is
# amortised, small enough that a batch never holds much memory.
_RESTORE_BATCH = 10_000
# The key -> serialized key cache: bounded, so 20 M distinct keys do not live on the
# heap; big enough that the keys of a window of records hit it.
_KEY_CACHE_SIZE = 65_536
# ``_weir_keys`` holds the original of every non-canonical key ever used, unless swept:
# after this many new originals, the next ``_KEYS_SWEEP_ENTRIES`` of them (in key
# order, wrapping around) are checked and those of keys with no state left are dropped.
# Examining two per new one keeps the dead ones a fraction of the live ones; a check is
# a seek per table, so a new non-canonical key costs a few microseconds more.
_KEYS_SWEEP_EVERY = 1024
_KEYS_SWEEP_ENTRIES = 2048
_NOT_A_KEY = object()


def canonical_meta(meta: dict[str, StateMeta]) -> dict[str, StateMeta]:
    """What the canonical form records of the tables ``meta`` describes: no tables of
    blocks, but the namespaced tables they stand for."""
    out = {name: m for name, m in meta.items() if m.kind is not StateKind.BLOCKS}
    for name, m in meta.items():
        if m.kind is StateKind.BLOCKS:
            out.setdefault(blocks_target(name), StateMeta(StateKind.NAMESPACED))
    return out


def _default_kind(name: str) -> StateKind:
    """Tables of snapshots written before kinds were recorded: the runtime's are
    namespaced, the rest were ValueStates (the reduce operator's)."""
    if name.startswith(("_weir_window", "_weir_timers")):
        return StateKind.NAMESPACED
    return StateKind.VALUE


class RocksDBKeyedStateBackend(KeyedStateBackend):
    """Keyed state in RocksDB (Flink's EmbeddedRocksDBStateBackend).

    ``directory`` is where the database lives (made if missing, deleted on dispose);
    ``clock_ms`` the processing-time clock of state TTL.
    """

    _plain_kinds = {
        StateKind.VALUE: RocksValueState,
        StateKind.LIST: RocksListState,
        StateKind.MAP: RocksMapState,
        StateKind.REDUCING: RocksReducingState,
        StateKind.AGGREGATING: RocksAggregatingState,
    }
    _ttl_storages = {
        StateKind.VALUE: RocksEntry,
        StateKind.LIST: RocksListEntry,
        StateKind.MAP: RocksMapEntries,
        StateKind.REDUCING: RocksEntry,
        StateKind.AGGREGATING: RocksEntry,
    }

    def __init__(
        self,
        max_parallelism: int,
        key_group_range: range,
        directory: str,
        key_hasher: PyFlinkKeyHasher | None = None,
        clock_ms: Callable[[], int] | None = None,
    ) -> None:
        super().__init__(max_parallelism, key_group_range, key_hasher, clock_ms)
        self.directory = directory
        self.db_path = os.path.join(directory, "db")
        self.instance_id = uuid.uuid4().hex
        """Names the SST files this database uploads, unique across restores."""
        self._db: Rdict | None = None
        self._block_cache = block_cache()
        self._cfs: dict[str, Rdict] = {}
        self._caches: dict[str, WriteBackColumnFamily] = {}
        self.write_options = WriteOptions()
        self.write_options.disable_wal = True  # type: ignore[method-assign,assignment]
        self.incremental = False
        """Checkpoints upload SST files (``rocksdb_incremental``) instead of the
        canonical form."""
        self.transfer_threads = 1
        """Files of an incremental checkpoint uploaded (and of a restore downloaded) at
        once (``state.backend.rocksdb.checkpoint.transfer.thread.num``)."""
        self._namespaced: dict[str, RocksNamespacedTable] = {}
        self._key_cache: dict[Any, bytes] = {}
        self._last_key: Any = _NOT_A_KEY
        self._last_key_bytes = b""
        self._keys_added = 0
        self._keys_sweep_from = b""
        self.uploaded: dict[str, Any] = {}
        """SST file name -> its handle in ``shared/``, of the last completed checkpoint
        (what the next incremental checkpoint may refer to instead of uploading)."""
        self.pending_uploads: dict[int, dict[str, Any]] = {}
        self._disposed = False
        self._open([])

    # --- the database ------------------------------------------------------------------

    def _open(self, column_families: list[str]) -> None:
        try:
            os.makedirs(self.directory, exist_ok=True)
        except OSError as exc:
            msg = (
                f"the rocksdb state backend cannot create its directory {self.directory}: "
                f"{exc.strerror or exc}; set taskmanager.state.local.root-dirs to a "
                "writable local directory"
            )
            raise ConfigurationError(msg) from exc
        names = sorted({*column_families, KEYS_CF})
        try:
            self._db = open_db(self.db_path, names, cache=self._block_cache)
        except Exception as exc:  # rocksdict raises a bare Exception for RocksDB's errors
            msg = (
                f"the rocksdb state backend cannot open its database in {self.db_path}: "
                f"{exc}; if that disk is full, make room or set "
                "taskmanager.state.local.root-dirs to a local directory with space"
            )
            raise ConfigurationError(msg) from exc
        self._cfs = {}
        self._caches = {}
        for name in names:
            if name != DEFAULT_CF:
                self._cfs[name] = self._column_family(name, create=False)

    def _column_family(self, name: str, create: bool = True) -> Rdict:
        cf = self._cfs.get(name)
        if cf is not None:
            return cf
        db = self._db
        assert db is not None
        cf = (
            db.create_column_family(name, db_options(self._block_cache))
            if create
            else db.get_column_family(name)
        )
        cf.set_write_options(self.write_options)
        self._cfs[name] = cf
        return cf

    def _cached(self, name: str) -> WriteBackColumnFamily:
        """Column family ``name`` behind its write-back cache (what states use)."""
        cache = self._caches.get(name)
        if cache is None:
            cf = self._column_family(name)
            handle = self.db.get_column_family_handle(name)
            cache = self._caches[name] = WriteBackColumnFamily(
                self.db, cf, handle, self.write_options
            )
        return cache

    def flush(self) -> None:
        """Write what the states' caches hold to RocksDB (before it is read directly:
        snapshots, checkpoints)."""
        for cache in self._caches.values():
            cache.flush()

    def _invalidate_caches(self) -> None:
        for cache in self._caches.values():
            cache.invalidate()

    def column_family_for_restore(self, name: str) -> Rdict:
        """Column family ``name``, to be written directly (before any record)."""
        cache = self._caches.get(name)
        if cache is not None:
            cache.invalidate()
        return self._column_family(name)

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        # The coordinator keeps the files of its latest completed checkpoint: the next
        # checkpoint may refer to them. Older pending uploads were subsumed.
        files = self.pending_uploads.pop(checkpoint_id, None)
        if files is not None:
            self.uploaded = files
        for older in [n for n in self.pending_uploads if n < checkpoint_id]:
            del self.pending_uploads[older]

    def notify_checkpoint_aborted(self, checkpoint_id: int) -> None:
        self.pending_uploads.pop(checkpoint_id, None)

    @property
    def db(self) -> Rdict:
        assert self._db is not None
        return self._db

    def column_families(self) -> dict[str, Rdict]:
        return dict(self._cfs)

    def table_meta(self) -> dict[str, StateMeta]:
        """Every table's meta: registered, else restored."""
        meta = dict(self._restored_meta)
        meta.update(self._meta)
        return meta

    # --- keys --------------------------------------------------------------------------

    def key_bytes(self) -> bytes:
        """The serialized current key (key group, length, canonical bytes)."""
        key = self.current_key
        if key is self._last_key:
            return self._last_key_bytes
        serialized = self.bytes_of_key(key)
        self._last_key = key
        self._last_key_bytes = serialized
        return serialized

    def bytes_of_key(self, key: Any) -> bytes:
        cache = self._key_cache
        try:
            serialized = cache.get(key)
        except TypeError:  # an unhashable key: never cached
            return self._serialize_key(key)
        if serialized is None:
            serialized = self._serialize_key(key)
            if len(cache) >= _KEY_CACHE_SIZE:
                cache.clear()
            cache[key] = serialized
        return serialized

    def _serialize_key(self, key: Any) -> bytes:
        canonical = canonical_key_bytes(key)
        group = self.key_hasher.key_group_of_canonical(key, canonical, self.max_parallelism)
        serialized = serialized_key(group, canonical)
        if not is_canonical(key):
            self._keys_added += 1
            if self._keys_added >= _KEYS_SWEEP_EVERY:
                # Before this key's original goes in: it has no state yet.
                self._keys_added = 0
                self._sweep_keys()
            self._cfs[KEYS_CF].put(serialized, pickle_key(key))
        return serialized

    def _sweep_keys(self) -> None:
        """Drop the originals of keys without state among the next ``_KEYS_SWEEP_ENTRIES``
        of ``_weir_keys`` (task thread)."""
        self.flush()
        keys = self._cfs[KEYS_CF]
        tables = [cf.iter() for name, cf in self._cfs.items() if name != KEYS_CF]
        it = keys.iter()
        it.seek(self._keys_sweep_from)
        unused = []
        for _ in range(_KEYS_SWEEP_ENTRIES):
            if not it.valid():
                break
            serialized = it.key()
            if not any(holds_prefix(table, serialized) for table in tables):
                unused.append(serialized)
            it.next()
        self._keys_sweep_from = it.key() if it.valid() else b""
        del it, tables
        if unused:
            for serialized in unused:
                keys.delete(serialized)
            # A cached key's bytes stand for "its original is recorded": no longer true.
            self._key_cache.clear()
            self._last_key = _NOT_A_KEY
            logger.debug("dropped %d originals of keys without state", len(unused))

    def decode_key(self, serialized: bytes) -> Any:
        return decode_key(self._cfs[KEYS_CF], serialized)

    scan_by_key = staticmethod(scan_by_key)

    # --- registration --------------------------------------------------------------------

    def _holds_table(self, table: str) -> bool:
        return table in self._restored_meta

    def _table_storage(self, table: str) -> WriteBackColumnFamily:
        return self._cached(table)

    def get_namespaced_table(self, name: str) -> RocksNamespacedTable:
        table = self._namespaced.get(name)
        if table is None:
            wanted = StateMeta(StateKind.NAMESPACED)
            check_registration(name, wanted, None, self._restored_meta.get(name))
            table = RocksNamespacedTable(self, self._cached(name))
            self._namespaced[name] = table
            self._meta[name] = wanted
        return table

    def get_block_table(self, name: str) -> tuple[Rdict, Any]:
        """The column family ``name`` of columnar blocks (``StateKind.BLOCKS``, see
        ``weir.taskmanager.state.rocksdb_blocks``) and its handle, for a WriteBatch: its
        user writes and reads it directly, and flushes what it caches before a snapshot
        is taken (``snapshot_state``)."""
        wanted = StateMeta(StateKind.BLOCKS)
        check_registration(name, wanted, self._meta.get(name), self._restored_meta.get(name))
        self._meta[name] = wanted
        return self._column_family(name), self.db.get_column_family_handle(name)

    def unblock_table(self, name: str) -> None:
        blocks = blocks_table(name)
        cf = self._cfs.get(blocks)
        if cf is None:
            return
        table = self.get_namespaced_table(name)
        for _group, key, namespace, value in canonical_block_entries(cf):
            self.current_key = key
            table.put(key, namespace, value)
        del cf
        # Dropped, not left behind: the next checkpoint would carry the blocks again
        # beside their entries, and a restore into blocks would count them twice.
        self._cfs.pop(blocks)
        self._caches.pop(blocks, None)
        self._meta.pop(blocks, None)
        self._restored_meta.pop(blocks, None)
        self.db.drop_column_family(blocks)
        logger.info("restored windows kept in blocks, now key by key in %s", name)

    def get_keys(self, name: str) -> list[Any]:
        # One scan of the state's column family (its TTL form's, when that is the one
        # there), not a snapshot of every table; after what the caches hold is written.
        self.flush()
        cf = self._cfs.get(name)
        if cf is None:
            cf = self._cfs.get(ttl_table(name))
        if cf is None:
            return []
        return [self.decode_key(serialized) for serialized, _ in self.scan_by_key(cf)]

    # --- snapshots in the canonical form ------------------------------------------------

    def snapshot(self) -> KeyedStateSnapshot:
        self.flush()
        states: dict[str, dict[int, dict[Any, Any]]] = {}
        meta = self.table_meta()
        now = self.clock_ms() if self._snapshot_filters else 0
        keys = self._cfs[KEYS_CF]
        blocks = []
        for name, table_meta in meta.items():
            cf = self._cfs.get(name)
            if cf is None:
                continue
            if table_meta.kind is StateKind.BLOCKS:
                blocks.append((name, cf))
                continue
            alive = self._snapshot_filters.get(name)
            by_group: dict[int, dict[Any, Any]] = {}
            for group, key, value in canonical_entries(cf, table_meta.kind, keys, alive, now):
                by_group.setdefault(group, {})[key] = value
            states[name] = by_group
        # Blocks are the table they stand for, key by key (canonical_meta).
        for name, cf in blocks:
            fold_blocks(states.setdefault(blocks_target(name), {}), canonical_block_entries(cf))
        return KeyedStateSnapshot(self.max_parallelism, states, canonical_meta(meta))

    def snapshot_filters(self) -> dict[str, Callable[[Any, int], Any]]:
        """Per table, what a full snapshot keeps of a stored value at a time (TTL
        states cleaned up in full snapshots); pure functions, callable off the task
        thread."""
        return dict(self._snapshot_filters)

    def restore(self, snapshots: list[KeyedStateSnapshot]) -> None:
        owned = self.key_group_range
        db = self.db
        # Column blocks (a hashmap backend's windows held as columns) as entries.
        for snap in map(with_columns_as_entries, snapshots):
            self._restored_meta.update(snap.meta)
            for name, by_group in snap.states.items():
                meta = snap.meta.get(name) or StateMeta(_default_kind(name))
                self._restored_meta.setdefault(name, meta)
                self._column_family(name)
                handle = db.get_column_family_handle(name)
                batch = WriteBatch(raw_mode=True)
                for group, entries in by_group.items():
                    if group not in owned:
                        continue
                    for key, value in entries.items():
                        for entry, raw in entries_of(meta.kind, self.bytes_of_key(key), value):
                            batch.put(entry, raw, handle)
                        if batch.len() >= _RESTORE_BATCH:
                            db.write(batch, self.write_options)
                            batch = WriteBatch(raw_mode=True)
                if batch.len():
                    db.write(batch, self.write_options)
        self._invalidate_caches()

    def restore_meta(self, meta: dict[str, StateMeta]) -> None:
        """Record what the tables of a natively restored database are."""
        self._restored_meta.update(meta)

    def reopen(self, column_families: list[str]) -> None:
        """Open the database again after its files were replaced (a native restore)."""
        self.close_db()
        self._open(column_families)
        self._key_cache.clear()
        self._last_key = _NOT_A_KEY

    def close_db(self) -> None:
        self.flush()
        db = self._db
        self._db = None
        self._cfs = {}
        self._caches = {}
        if db is not None:
            db.close()

    def dispose(self) -> None:
        if self._disposed:
            return
        self._disposed = True
        self._states.clear()
        self._namespaced.clear()
        self._caches = {}  # nothing to flush into a database about to be deleted
        try:
            self.close_db()
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)
