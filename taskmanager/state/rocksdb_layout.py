"""How the ``rocksdb`` state backend lays out its database: the options it opens it with,
the serialized keys (key group, length, canonical bytes) and their originals in
``_weir_keys``, and a key's entries as the canonical value every backend snapshots
(see ``weir.taskmanager.state.rocksdb`` for the layout itself)."""

from __future__ import annotations

import os
import pickle
import struct
from collections.abc import Callable, Iterator
from typing import Any

import cloudpickle
from rocksdict import (
    AccessType,
    BlockBasedIndexType,
    BlockBasedOptions,
    Cache,
    DBCompressionType,
    Options,
    Rdict,
)

from weir.core.canonical_keys import canonical_key_bytes
from weir.core.errors import ConfigurationError
from weir.taskmanager.state.backend import StateKind
from weir.taskmanager.state.rocksdb_cache import WriteBackColumnFamily
from weir.taskmanager.state.rocksdb_states import (
    dump_value,
    load_value,
    namespace_bytes,
    pack_elements,
    unpack_elements,
)

KEYS_CF = "_weir_keys"
DEFAULT_CF = "default"
_PICKLE = 5
_U16 = struct.Struct(">H")
_U32 = struct.Struct(">I")
KEY_GROUP_PREFIXES = [_U16.pack(i) for i in range(1 << 16)]
# A key's length takes two bytes; from 0xFFFF bytes on, these two then four.
_LONG_KEY = 0xFFFF
_LONG_KEY_MARK = _U16.pack(_LONG_KEY)
# Memory RocksDB may use for all memtables of one backend, and its block cache: both
# bounded so that state much larger than memory keeps the TaskManager's RSS flat.
_WRITE_BUFFER_BYTES = 64 << 20
_MEMTABLE_BYTES = 16 << 20
_BLOCK_CACHE_BYTES = 64 << 20
_BLOOM_BITS_PER_KEY = 10
_METADATA_BLOCK_BYTES = 4096


def db_options(cache: Cache) -> Options:
    """Options of a database or column family, its blocks cached in ``cache``."""
    options = Options(raw_mode=True)
    options.create_if_missing(True)
    options.create_missing_column_families(True)
    options.set_compression_type(DBCompressionType.lz4())
    options.set_db_write_buffer_size(_WRITE_BUFFER_BYTES)
    options.set_write_buffer_size(_MEMTABLE_BYTES)
    options.set_max_background_jobs(2)
    table = BlockBasedOptions()
    table.set_block_cache(cache)
    # A key seen for the first time is looked up before it is written: without a filter
    # that read goes through every level's index and data blocks to find nothing.
    # 10 bits a key (~1 % false positives), kept in the block cache.
    table.set_bloom_filter(_BLOOM_BITS_PER_KEY, False)
    # Index and filters in the block cache (bounded memory), partitioned into blocks of
    # _METADATA_BLOCK_BYTES: the filter of an SST file of millions of keys is megabytes,
    # more than one shard of the cache holds, and unpartitioned it was read from the file
    # again on every lookup (Flink's state.backend.rocksdb.memory.partitioned-index-filters).
    table.set_cache_index_and_filter_blocks(True)
    table.set_index_type(BlockBasedIndexType.two_level_index_search())
    table.set_partition_filters(True)
    table.set_metadata_block_size(_METADATA_BLOCK_BYTES)
    table.set_pin_top_level_index_and_filter(True)
    options.set_block_based_table_factory(table)
    return options


def block_cache() -> Cache:
    """The block cache of one database, shared by all its column families: what a
    backend's RocksDB keeps of its files in memory is bounded by it, however many states
    the operator has."""
    return Cache(_BLOCK_CACHE_BYTES)


def open_db(
    path: str, column_families: list[str], *, read_only: bool = False, cache: Cache | None = None
) -> Rdict:
    """Open (or create) the database at ``path`` with these column families, their blocks
    in ``cache`` (a new one when None)."""
    cache = cache or block_cache()
    options = db_options(cache)
    families = {name: db_options(cache) for name in column_families if name != DEFAULT_CF}
    if read_only:
        # A checkpoint's copy: nothing is written into it (it has no write-ahead log,
        # the backend writes none).
        access = AccessType.read_only(error_if_log_file_exist=False)
        return Rdict(path, options, column_families=families, access_type=access)
    return Rdict(path, options, column_families=families)


def create_db_directory(root: str, name: str) -> str:
    """``{root}/{name}``, created; ConfigurationError naming the key and the path when
    it cannot be."""
    path = os.path.join(root, name)
    try:
        os.makedirs(path, exist_ok=False)
    except FileExistsError:
        return path
    except OSError as exc:
        msg = (
            f"the rocksdb state backend cannot create its directory {path}: "
            f"{exc.strerror or exc}; set taskmanager.state.local.root-dirs to a writable "
            "local directory"
        )
        raise ConfigurationError(msg) from exc
    return path


def serialized_key(key_group: int, canonical: bytes) -> bytes:
    """The key a state entry starts with: key group (u16), length, canonical bytes. The
    length is a u16 below 0xFFFF bytes, else 0xFFFF and a u32 (keys of any size, with no
    cost to the usual ones). No serialized key is a prefix of another's: keys of one
    length agree on the length's bytes, and a long key's 0xFFFF is no short key's."""
    n = len(canonical)
    if n < _LONG_KEY:
        return KEY_GROUP_PREFIXES[key_group] + _U16.pack(n) + canonical
    return KEY_GROUP_PREFIXES[key_group] + _LONG_KEY_MARK + _U32.pack(n) + canonical


def _key_start(entry: bytes) -> int:
    """Where the canonical bytes of an entry's serialized key start."""
    return 8 if _U16.unpack_from(entry, 2)[0] == _LONG_KEY else 4


def _key_end(entry: bytes) -> int:
    """Where the serialized key an entry starts with ends."""
    length = _U16.unpack_from(entry, 2)[0]
    if length != _LONG_KEY:
        return 4 + length
    return 8 + _U32.unpack_from(entry, 4)[0]


def scan_by_key(
    cf: Rdict | WriteBackColumnFamily, prefix: bytes = b""
) -> Iterator[tuple[bytes, list[tuple[bytes, bytes]]]]:
    """The entries of ``cf`` (starting with ``prefix``) grouped by serialized key."""
    it = cf.iter()
    if prefix:
        it.seek(prefix)
    else:
        it.seek_to_first()
    current: bytes | None = None
    group: list[tuple[bytes, bytes]] = []
    while it.valid():
        entry = it.key()
        if prefix and not entry.startswith(prefix):
            break
        key = entry[: _key_end(entry)]
        if key != current:
            if current is not None:
                yield current, group
            current, group = key, []
        group.append((entry, it.value()))
        it.next()
    if current is not None:
        yield current, group


def pickle_key(key: Any) -> bytes:
    try:
        return pickle.dumps(key, _PICKLE)
    except (pickle.PicklingError, TypeError, AttributeError):
        return cloudpickle.dumps(key, protocol=_PICKLE)  # type: ignore[no-any-return]


def holds_prefix(it: Any, prefix: bytes) -> bool:
    it.seek(prefix)
    return bool(it.valid() and it.key().startswith(prefix))


def decode_key(keys: Rdict, serialized: bytes) -> Any:
    """The key of a serialized key, read through the database's ``_weir_keys``."""
    original = keys.get(serialized)
    if original is not None:
        return pickle.loads(original)
    return pickle.loads(serialized[_key_start(serialized) :])


def canonical_entries(
    cf: Rdict,
    kind: StateKind,
    keys: Rdict,
    alive: Callable[[Any, int], Any] | None,
    now: int,
    *,
    prefix: bytes = b"",
) -> Iterator[tuple[int, Any, Any]]:
    """``(key group, key, canonical value)`` of every key in ``cf`` whose serialized
    form starts with ``prefix``, without what ``alive`` drops at ``now``."""
    for serialized, entries in scan_by_key(cf, prefix):
        value = canonical_value(kind, entries)
        if alive is not None:
            value = alive(value, now)
            if value is None:
                continue
        yield _U16.unpack_from(serialized)[0], decode_key(keys, serialized), value


def key_group_prefix(key_group: int) -> bytes:
    """What every serialized key of ``key_group`` starts with."""
    return KEY_GROUP_PREFIXES[key_group]


def canonical_value(kind: StateKind, entries: list[tuple[bytes, bytes]]) -> Any:
    """A key's entries as the hashmap backend keeps its value."""
    loads = load_value
    if kind is StateKind.MAP or kind is StateKind.NAMESPACED:
        return dict(loads(raw) for _, raw in entries)
    raw = entries[0][1]
    if kind is StateKind.LIST:
        return unpack_elements(raw)
    return loads(raw)


def entries_of(kind: StateKind, prefix: bytes, value: Any) -> Iterator[tuple[bytes, bytes]]:
    """A canonical value as the entries of one key."""
    dumps = dump_value
    if kind is StateKind.MAP:
        for user_key, user_value in value.items():
            yield prefix + canonical_key_bytes(user_key), dumps((user_key, user_value))
    elif kind is StateKind.NAMESPACED:
        for namespace, ns_value in value.items():
            yield prefix + namespace_bytes(namespace), dumps((namespace, ns_value))
    elif kind is StateKind.LIST:
        if value:
            yield prefix, pack_elements(list(value))
    else:
        yield prefix, dumps(value)
