"""A write-back cache in front of one column family of the rocksdb backend.

A call into RocksDB through rocksdict costs about a microsecond (the binding and the
memtable or block lookup), several times what the rest of a state access costs in
Python; a keyed running count paid two per record. ``WriteBackColumnFamily`` keeps the
entries a task reads and writes in two dicts of serialized bytes:

- ``dirty``: entries written since the last flush (``None`` for a deletion), each key
  once however often it was written. A flush writes them to RocksDB as one
  ``WriteBatch`` when they hold ``_DIRTY_BYTES``, and always before RocksDB itself is
  read past the cache: before a scan (``iter``/``delete_range``), a snapshot, a
  checkpoint, closing the database;
- ``clean``: entries known to equal RocksDB's (read, or flushed), ``None`` for a key
  known to be absent; dropped whole once they hold ``_CLEAN_BYTES``.

Values stay bytes, so what a state read returns is still deserialized afresh: a copy,
as without the cache. Sizes are estimates (``_ENTRY_BYTES`` per entry for the dict and
the two bytes objects, plus the bytes), so memory per column family stays within a
few tens of MB however many keys the state holds.

Task thread only, like the backend: no locks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rocksdict import WriteBatch

if TYPE_CHECKING:
    from rocksdict import ColumnFamily, Rdict, RdictIter, WriteOptions

# Written entries are flushed at this size: the hot keys of a state (e.g. 30 k running
# counts) stay in memory until the next checkpoint; a WriteBatch of ~30 k small
# entries amortises its call; never much memory per state.
_DIRTY_BYTES = 4 << 20
# Entries known to be in RocksDB are dropped at this size: the hot keys of a state fit
# (e.g. 60 k running counts); the working set of 20 M keys does not, and needs not.
_CLEAN_BYTES = 8 << 20
# What Python spends per cached entry besides the bytes: the dict slot, two bytes
# object headers.
_ENTRY_BYTES = 112
_MISS = object()


class WriteBackColumnFamily:
    """``get``/``put``/``delete`` of one column family through the cache, and the
    rocksdict calls the states make (``iter``, ``delete_range``) after a flush."""

    __slots__ = (
        "_cf",
        "_clean",
        "_clean_bytes",
        "_db",
        "_dirty",
        "_dirty_bytes",
        "_handle",
        "_write_options",
    )

    def __init__(
        self, db: Rdict, cf: Rdict, handle: ColumnFamily, write_options: WriteOptions
    ) -> None:
        self._db = db
        self._cf = cf
        self._handle = handle
        self._write_options = write_options
        self._dirty: dict[bytes, bytes | None] = {}
        self._dirty_bytes = 0
        self._clean: dict[bytes, bytes | None] = {}
        self._clean_bytes = 0

    def get(self, key: bytes) -> Any:
        """The value of ``key`` (bytes), or None."""
        value = self._dirty.get(key, _MISS)
        if value is _MISS:
            value = self._clean.get(key, _MISS)
            if value is _MISS:
                value = self._cf.get(key)
                if self._clean_bytes > _CLEAN_BYTES:
                    self._clean.clear()
                    self._clean_bytes = 0
                self._clean[key] = value
                self._clean_bytes += _ENTRY_BYTES + len(key) + (len(value) if value else 0)
        return value

    def put(self, key: bytes, value: bytes) -> None:
        # Counts the size of what the dict holds, not of what passed through it: a hot
        # key rewritten a million times between two checkpoints is one entry.
        dirty = self._dirty
        old = dirty.get(key, _MISS)
        if old is _MISS:
            self._dirty_bytes += _ENTRY_BYTES + len(key) + len(value)
        else:
            self._dirty_bytes += len(value) - (len(old) if old else 0)  # type: ignore[arg-type]
        dirty[key] = value
        if self._dirty_bytes > _DIRTY_BYTES:
            self.flush()

    def delete(self, key: bytes) -> None:
        dirty = self._dirty
        old = dirty.get(key, _MISS)
        if old is _MISS:
            self._dirty_bytes += _ENTRY_BYTES + len(key)
        elif old:
            self._dirty_bytes -= len(old)  # type: ignore[arg-type]
        dirty[key] = None
        if self._dirty_bytes > _DIRTY_BYTES:
            self.flush()

    def flush(self) -> None:
        """Write the dirty entries to RocksDB (one WriteBatch); they become clean."""
        dirty = self._dirty
        if not dirty:
            return
        batch = WriteBatch(raw_mode=True)
        handle = self._handle
        for key, value in dirty.items():
            if value is None:
                batch.delete(key, handle)
            else:
                batch.put(key, value, handle)
        self._db.write(batch, self._write_options)
        size = self._dirty_bytes
        self._dirty = {}
        self._dirty_bytes = 0
        clean = self._clean
        if self._clean_bytes + size > _CLEAN_BYTES:
            clean.clear()
            self._clean_bytes = 0
        clean.update(dirty)
        self._clean_bytes += size

    def invalidate(self) -> None:
        """Flush, and forget every clean entry (RocksDB was written past the cache)."""
        self.flush()
        self._clean.clear()
        self._clean_bytes = 0

    def iter(self) -> RdictIter:
        """An iterator over RocksDB, which holds everything written before the call."""
        self.flush()
        return self._cf.iter()

    def delete_range(self, begin: bytes, end: bytes) -> None:
        self.flush()
        self._clean.clear()
        self._clean_bytes = 0
        self._cf.delete_range(begin, end)
