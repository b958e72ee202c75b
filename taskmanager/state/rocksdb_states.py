"""The rocksdb backend's keyed state kinds: each a view of one column family that reads
and writes the serialized entries of the backend's current key.

Entry layout (``weir.taskmanager.state.rocksdb`` builds the key prefix)::

    Value, Reducing, Aggregating   key prefix                   -> dump(value)
    List                           key prefix                   -> [u32 length, dump]*
    Map                            key prefix + canonical(ukey) -> dump((ukey, value))
    namespaced tables              key prefix + namespace bytes -> dump((namespace, value))

``dump`` is ``marshal`` when the value is made of exact built-in types only (marshal
refuses anything else: a Row or a namedtuple is never turned into a tuple), else pickle
protocol 5, as the network's serializers choose; a pickle starts with 0x80, which no
marshal does, so a read knows which it holds. marshal is several times cheaper for the
numbers, strings and tuples state usually holds.

Under a TTL a value is stored as ``(value, last_access_ms)``, a list element and a map
value likewise, exactly as the hashmap backend keeps them, so both snapshot to the same
canonical form. Values are copies: what a read returns is deserialized, and changing it
changes the state only when it is written back (as on Flink's RocksDB backend).
"""

from __future__ import annotations

import marshal
import pickle
import struct
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import cloudpickle

from weir.core.canonical_keys import canonical_key_bytes
from weir.core.windowing import TimeWindow
from weir.taskmanager.state.backend import NamespacedTable
from weir.taskmanager.state.heap_states import ListStateContents, MapStateReads

if TYPE_CHECKING:
    from weir.taskmanager.state.rocksdb import RocksDBKeyedStateBackend
    from weir.taskmanager.state.rocksdb_cache import WriteBackColumnFamily

_PICKLE = 5
_MARSHAL_VERSION = 4
_PICKLE_PROTO = 0x80
_LENGTH = struct.Struct(">I")
_TWO_LONGS = struct.Struct(">QQ")
_LONG = struct.Struct(">Q")
# Signed 64-bit timestamps and window bounds shifted so that their bytes sort as numbers.
_SHIFT = 1 << 63


def dump_value(value: Any) -> bytes:
    """A value as stored: marshal when it can, else pickle (see the module docstring)."""
    try:
        return marshal.dumps(value, _MARSHAL_VERSION)
    except ValueError:  # not made of exact built-in types
        pass
    try:
        return pickle.dumps(value, _PICKLE)
    except (pickle.PicklingError, TypeError, AttributeError):
        # A lambda or an instance of a class defined in a function, as the hashmap
        # backend would keep it.
        return cloudpickle.dumps(value, protocol=_PICKLE)  # type: ignore[no-any-return]


def load_value(raw: bytes | memoryview) -> Any:
    """The inverse of ``dump_value`` (our own bytes)."""
    if raw[0] == _PICKLE_PROTO:
        return pickle.loads(raw)
    return marshal.loads(raw)  # noqa: S302


def pack_elements(values: list[Any]) -> bytes:
    """List elements as one value: each dumped, prefixed by its u32 length (an add
    appends bytes and never reads the elements already there)."""
    dumps, pack = dump_value, _LENGTH.pack
    parts = []
    for value in values:
        data = dumps(value)
        parts.append(pack(len(data)))
        parts.append(data)
    return b"".join(parts)


def unpack_elements(raw: bytes) -> list[Any]:
    out = []
    view = memoryview(raw)
    position, end = 0, len(raw)
    unpack, loads = _LENGTH.unpack_from, load_value
    while position < end:
        (length,) = unpack(view, position)
        position += 4
        out.append(loads(view[position : position + length]))
        position += length
    return out


def namespace_bytes(namespace: Any) -> bytes:
    """A namespace as bytes that are equal for equal namespaces and never a prefix of
    another's: windows and timestamps as fixed-width numbers that sort as they do."""
    t = type(namespace)
    if namespace is None:
        return b"\x00"
    if t is int and -_SHIFT <= namespace < _SHIFT:
        return b"\x01" + _LONG.pack(namespace + _SHIFT)
    if (
        t is TimeWindow
        and -_SHIFT <= namespace.start < _SHIFT
        and -_SHIFT <= namespace.end < _SHIFT
    ):
        return b"\x02" + _TWO_LONGS.pack(namespace.start + _SHIFT, namespace.end + _SHIFT)
    if t is tuple and len(namespace) == 2 and type(namespace[0]) is int:
        # A timer: (timestamp, namespace).
        return b"\x04" + namespace_bytes(namespace[0]) + namespace_bytes(namespace[1])
    return b"\x03" + canonical_key_bytes(namespace)


def prefix_end(prefix: bytes) -> bytes:
    """The smallest key greater than every key starting with ``prefix``."""
    stripped = prefix.rstrip(b"\xff")
    if not stripped:
        return b"\xff" * (len(prefix) + 1)
    return stripped[:-1] + bytes([stripped[-1] + 1])


def scan(cf: WriteBackColumnFamily, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
    """The entries of ``cf`` whose keys start with ``prefix``, in key order."""
    it = cf.iter()
    it.seek(prefix)
    while it.valid():
        key = it.key()
        if not key.startswith(prefix):
            return
        yield key, it.value()
        it.next()


class _RocksState:
    __slots__ = ("_backend", "_cf", "name")

    def __init__(
        self, backend: RocksDBKeyedStateBackend, name: str, cf: WriteBackColumnFamily
    ) -> None:
        self._backend = backend
        self._cf = cf
        self.name = name

    def clear(self) -> None:
        self._cf.delete(self._backend.key_bytes())


class RocksValueState(_RocksState):
    __slots__ = ()

    def value(self) -> Any:
        raw = self._cf.get(self._backend.key_bytes())
        return None if raw is None else load_value(raw)

    def update(self, value: Any) -> None:
        if value is None:  # PyFlink: updating to null clears the state
            self._cf.delete(self._backend.key_bytes())
        else:
            self._cf.put(self._backend.key_bytes(), dump_value(value))


class RocksReducingState(_RocksState):
    __slots__ = ("_reduce",)

    def __init__(
        self,
        backend: RocksDBKeyedStateBackend,
        name: str,
        cf: WriteBackColumnFamily,
        reduce: Callable[[Any, Any], Any],
    ) -> None:
        super().__init__(backend, name, cf)
        self._reduce = reduce

    def get(self) -> Any:
        raw = self._cf.get(self._backend.key_bytes())
        return None if raw is None else load_value(raw)

    def add(self, value: Any) -> None:
        key = self._backend.key_bytes()
        raw = self._cf.get(key)
        result = value if raw is None else self._reduce(load_value(raw), value)
        self._cf.put(key, dump_value(result))


class RocksAggregatingState(_RocksState):
    __slots__ = ("_function",)

    def __init__(
        self, backend: RocksDBKeyedStateBackend, name: str, cf: WriteBackColumnFamily, function: Any
    ) -> None:
        super().__init__(backend, name, cf)
        self._function = function

    def get(self) -> Any:
        raw = self._cf.get(self._backend.key_bytes())
        return None if raw is None else self._function.get_result(load_value(raw))

    def add(self, value: Any) -> None:
        if value is None:
            self.clear()
            return
        key = self._backend.key_bytes()
        raw = self._cf.get(key)
        accumulator = self._function.create_accumulator() if raw is None else load_value(raw)
        self._cf.put(key, dump_value(self._function.add(value, accumulator)))


class RocksListState(_RocksState):
    __slots__ = ()

    def get(self) -> list[Any]:
        raw = self._cf.get(self._backend.key_bytes())
        return ListStateContents(() if raw is None else unpack_elements(raw))

    def add(self, value: Any) -> None:
        if value is None:
            msg = f"ListState {self.name!r}: cannot add None"
            raise ValueError(msg)
        self._append([value])

    def _append(self, values: list[Any]) -> None:
        key = self._backend.key_bytes()
        raw = self._cf.get(key)
        packed = pack_elements(values)
        self._cf.put(key, packed if raw is None else raw + packed)

    def add_all(self, values: list[Any]) -> None:
        values = list(values)
        if values:
            self._append(values)

    def update(self, values: list[Any]) -> None:
        values = list(values) if values is not None else []
        if values:
            self._cf.put(self._backend.key_bytes(), pack_elements(values))
        else:
            self.clear()

    def __iter__(self) -> Iterator[Any]:
        return iter(self.get())


class RocksMapState(MapStateReads, _RocksState):
    """MapState: one entry per user key, after the current key's prefix."""

    __slots__ = ()

    def _entry(self, user_key: Any) -> bytes:
        return self._backend.key_bytes() + canonical_key_bytes(user_key)

    def _map(self) -> dict[Any, Any]:
        return dict(self._entries())

    def _entries(self) -> list[tuple[Any, Any]]:
        loads = load_value
        return [loads(raw) for _, raw in scan(self._cf, self._backend.key_bytes())]

    def get(self, key: Any) -> Any:
        raw = self._cf.get(self._entry(key))
        return None if raw is None else load_value(raw)[1]

    def contains(self, key: Any) -> bool:
        return self._cf.get(self._entry(key)) is not None

    def is_empty(self) -> bool:
        return next(scan(self._cf, self._backend.key_bytes()), None) is None

    def put(self, key: Any, value: Any) -> None:
        self._cf.put(self._entry(key), dump_value((key, value)))

    def put_all(self, dict_value: dict[Any, Any]) -> None:
        for key, value in dict_value.items():
            self.put(key, value)

    def remove(self, key: Any) -> None:
        self._cf.delete(self._entry(key))

    def clear(self) -> None:
        prefix = self._backend.key_bytes()
        self._cf.delete_range(prefix, prefix_end(prefix))

    def __getitem__(self, key: Any) -> Any:
        return self.get(key)

    def __setitem__(self, key: Any, value: Any) -> None:
        self.put(key, value)

    def __delitem__(self, key: Any) -> None:
        self.remove(key)


class RocksNamespacedTable(NamespacedTable):
    """A runtime table in one column family: ``key prefix + namespace bytes``."""

    __slots__ = ("_backend", "_cf")

    def __init__(self, backend: RocksDBKeyedStateBackend, cf: WriteBackColumnFamily) -> None:
        self._backend = backend
        self._cf = cf

    def get(self, key: Any, namespace: Any, default: Any = None) -> Any:
        raw = self._cf.get(self._backend.bytes_of_key(key) + namespace_bytes(namespace))
        return default if raw is None else load_value(raw)[1]

    def put(self, key: Any, namespace: Any, value: Any) -> None:
        self._cf.put(
            self._backend.bytes_of_key(key) + namespace_bytes(namespace),
            dump_value((namespace, value)),
        )

    def remove(self, key: Any, namespace: Any) -> None:
        self._cf.delete(self._backend.bytes_of_key(key) + namespace_bytes(namespace))

    def entries(self) -> Iterator[tuple[Any, Any, Any]]:
        backend = self._backend
        for key_bytes, group in backend.scan_by_key(self._cf):
            key = backend.decode_key(key_bytes)
            for _, raw in group:
                namespace, value = load_value(raw)
                yield key, namespace, value

    def is_empty(self) -> bool:
        it = self._cf.iter()
        it.seek_to_first()
        return not it.valid()

    def clear_all(self) -> None:
        self._cf.delete_range(b"\x00", b"\xff")


# --- storage of TTL states (weir.taskmanager.state.ttl) --------------------------------


class RocksEntry:
    """The current key's stored value in one column family."""

    __slots__ = ("_backend", "_cf")

    def __init__(self, backend: RocksDBKeyedStateBackend, cf: WriteBackColumnFamily) -> None:
        self._backend = backend
        self._cf = cf

    def load(self) -> Any:
        raw = self._cf.get(self._backend.key_bytes())
        return None if raw is None else load_value(raw)

    def save(self, stored: Any) -> None:
        self._cf.put(self._backend.key_bytes(), dump_value(stored))

    def delete(self) -> None:
        self._cf.delete(self._backend.key_bytes())


class RocksListEntry(RocksEntry):
    """The current key's stored elements, packed one after another."""

    __slots__ = ()

    def load(self) -> Any:
        raw = self._cf.get(self._backend.key_bytes())
        return None if raw is None else unpack_elements(raw)

    def save(self, stored: Any) -> None:
        self._cf.put(self._backend.key_bytes(), pack_elements(stored))

    def append(self, stored: list[Any]) -> None:
        key = self._backend.key_bytes()
        raw = self._cf.get(key)
        packed = pack_elements(stored)
        self._cf.put(key, packed if raw is None else raw + packed)


class RocksMapEntries:
    """The current key's entries, one per user key: ``dump((user_key, stored))``."""

    __slots__ = ("_backend", "_cf")

    def __init__(self, backend: RocksDBKeyedStateBackend, cf: WriteBackColumnFamily) -> None:
        self._backend = backend
        self._cf = cf

    def _entry(self, user_key: Any) -> bytes:
        return self._backend.key_bytes() + canonical_key_bytes(user_key)

    def load(self, user_key: Any) -> Any:
        raw = self._cf.get(self._entry(user_key))
        return None if raw is None else load_value(raw)[1]

    def save(self, user_key: Any, stored: Any) -> None:
        self._cf.put(self._entry(user_key), dump_value((user_key, stored)))

    def delete(self, user_key: Any) -> None:
        self._cf.delete(self._entry(user_key))

    def entries(self) -> list[tuple[Any, Any]]:
        loads = load_value
        return [loads(raw) for _, raw in scan(self._cf, self._backend.key_bytes())]

    def clear(self) -> None:
        prefix = self._backend.key_bytes()
        self._cf.delete_range(prefix, prefix_end(prefix))
