"""The keyed state backend abstraction: per-key state behind ``RuntimeContext.get_state``.

A keyed operator sets the backend's current key once per record (``current_key``),
then user code reads and writes state objects bound to the backend; every access
resolves against that key. Backends are used by exactly one task thread, so they
take no locks.

Two implementations: ``hashmap`` (Python objects on the heap) and ``rocksdb`` (an
embedded RocksDB that serializes the current key, with its key-group prefix, on
access). The runtime's own per-key tables (window contents, timers) are
``NamespacedTable``s, ``{key: {namespace: value}}``, on either backend.

Snapshots: ``snapshot()`` captures the state synchronously on the task thread in the
*canonical form*, the same on every backend: ``{table: {key_group: {key: value}}}``
where a value is what the hashmap backend keeps for the key (a list for ListState, a
dict for MapState and for namespaced tables, ``(value, last_access_ms)`` pairs under a
TTL), with each table's ``StateMeta``. Any backend restores the canonical form of any
other, for any key-group range, which is what savepoints and rescaling build on.
The asynchronous write is the caller's business. A backend may also offer a native
snapshot (``rocksdb``: incremental, SST files) that only it reads directly.
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from weir.core.errors import StateMigrationError, WeirError
from weir.core.key_groups import PyFlinkKeyHasher
from weir.core.state_ttl import StateTtl


class StateAccessError(WeirError, RuntimeError):
    """Keyed state was used where there is no key (a non-keyed operator or no record)."""


class ValueState(Protocol):
    """PyFlink's ValueState: one value per key (``None`` when unset)."""

    def value(self) -> Any: ...

    def update(self, value: Any) -> None: ...

    def clear(self) -> None: ...


class StateKind(enum.Enum):
    """How a table of keyed state is laid out (Flink's ``StateDescriptor.Type``, plus the
    runtime's namespaced tables)."""

    VALUE = "VALUE"
    LIST = "LIST"
    MAP = "MAP"
    REDUCING = "REDUCING"
    AGGREGATING = "AGGREGATING"
    NAMESPACED = "NAMESPACED"
    """``{namespace: value}`` per key: window contents, window state, timers."""

    @property
    def label(self) -> str:
        """How error messages name the kind."""
        return {
            "VALUE": "ValueState",
            "LIST": "ListState",
            "MAP": "MapState",
            "REDUCING": "ReducingState",
            "AGGREGATING": "AggregatingState",
            "NAMESPACED": "runtime table",
        }[self.value]


DEFAULT_SERIALIZER = "pickle"
"""The serializer a state has when its descriptor declares no type."""


@dataclass(frozen=True, slots=True)
class StateMeta:
    """What a snapshot records of each table, so that a restore can lay it out before
    the state is registered and refuse a registration that cannot read it."""

    kind: StateKind
    serializer: str = DEFAULT_SERIALIZER
    """The declared type of the values (``str`` of the descriptor's TypeInformation)."""


@dataclass(frozen=True, slots=True)
class KeyedStateSnapshot:
    """State of one backend in the canonical form, as
    ``{table_name: {key_group: {key: value}}}`` (see the module docstring)."""

    max_parallelism: int
    states: Mapping[str, Mapping[int, Mapping[Any, Any]]]
    meta: Mapping[str, StateMeta] = field(default_factory=dict)


def check_registration(
    name: str, wanted: StateMeta, registered: StateMeta | None, restored: StateMeta | None
) -> None:
    """Refuse a registration of state ``name`` as ``wanted`` when it was registered
    (StateAccessError) or restored (StateMigrationError) as another kind or serializer."""
    if registered is not None and registered != wanted:
        msg = (
            f"state {name!r} is already registered as a {registered.kind.label} of "
            f"{registered.serializer}; a {wanted.kind.label} of {wanted.serializer} "
            "needs another name"
        )
        raise StateAccessError(msg)
    if restored is not None and restored != wanted:
        msg = (
            f"state {name!r} was restored as a {restored.kind.label} of "
            f"{restored.serializer} and is now registered as a {wanted.kind.label} of "
            f"{wanted.serializer}; its stored values cannot be read that way. Register it "
            "as it was when the snapshot was taken, or give it another name to start it "
            "empty"
        )
        raise StateMigrationError(msg)


def serializer_name(type_info: Any) -> str:
    """How a descriptor's declared type is named in ``StateMeta``."""
    return DEFAULT_SERIALIZER if type_info is None else str(type_info)


class NamespacedTable(abc.ABC):
    """One runtime table ``{key: {namespace: value}}`` of a backend (Flink's namespaced
    internal state): window contents and per-window state by window, timers by
    ``(timestamp, namespace)``. Keys are passed explicitly; values read are copies on
    the ``rocksdb`` backend, so a changed value must be ``put`` back."""

    __slots__ = ()

    @abc.abstractmethod
    def get(self, key: Any, namespace: Any, default: Any = None) -> Any:
        """The value of ``key`` in ``namespace``, or ``default``."""

    @abc.abstractmethod
    def put(self, key: Any, namespace: Any, value: Any) -> None: ...

    @abc.abstractmethod
    def remove(self, key: Any, namespace: Any) -> None:
        """Drop the value of ``key`` in ``namespace``; no error when there is none."""

    @abc.abstractmethod
    def entries(self) -> Iterator[tuple[Any, Any, Any]]:
        """Every ``(key, namespace, value)`` (restore, rebuilding indexes)."""

    @abc.abstractmethod
    def is_empty(self) -> bool: ...

    @abc.abstractmethod
    def clear_all(self) -> None:
        """Drop every key's values."""


class KeyedStateBackend(abc.ABC):
    """Per-key state of one operator in one subtask.

    ``current_key`` is a plain attribute on purpose: the keyed operators set it once
    per record, and an attribute store is the cheapest way to do so in Python.
    """

    current_key: Any

    def __init__(
        self,
        max_parallelism: int,
        key_group_range: range,
        key_hasher: PyFlinkKeyHasher | None = None,
    ) -> None:
        self.max_parallelism = max_parallelism
        self.key_group_range = key_group_range
        # The same key -> key group function the senders route with.
        self.key_hasher = key_hasher or PyFlinkKeyHasher()
        self.current_key = None

    def key_group_of(self, key: Any) -> int:
        return self.key_hasher.key_group(key, self.max_parallelism)

    def set_current_key(self, key: Any) -> None:
        self.current_key = key

    def get_current_key(self) -> Any:
        return self.current_key

    # Each ``get_*_state`` returns the same object on every call with that name. With a
    # ``ttl`` the state's values expire as it says (see ``weir.core.state_ttl``); without
    # one they live until cleared.

    #
    # ``serializer`` names the declared type of the values (``DEFAULT_SERIALIZER`` when
    # the descriptor has none); registering a name again with another kind or
    # serializer, or a restored state as another kind or serializer, raises
    # StateMigrationError naming both.

    in_memory: bool = False
    """State lives in Python objects (the runtime may keep indexes of it in memory)."""

    @abc.abstractmethod
    def get_value_state(
        self, name: str, ttl: StateTtl | None = None, serializer: str = DEFAULT_SERIALIZER
    ) -> ValueState:
        """The ValueState called ``name``."""

    @abc.abstractmethod
    def get_list_state(
        self, name: str, ttl: StateTtl | None = None, serializer: str = DEFAULT_SERIALIZER
    ) -> Any:
        """The ListState called ``name``."""

    @abc.abstractmethod
    def get_map_state(
        self, name: str, ttl: StateTtl | None = None, serializer: str = DEFAULT_SERIALIZER
    ) -> Any:
        """The MapState called ``name``."""

    @abc.abstractmethod
    def get_reducing_state(
        self,
        name: str,
        reduce: Callable[[Any, Any], Any],
        ttl: StateTtl | None = None,
        serializer: str = DEFAULT_SERIALIZER,
    ) -> Any:
        """The ReducingState called ``name``, folding with ``reduce``."""

    @abc.abstractmethod
    def get_aggregating_state(
        self,
        name: str,
        function: Any,
        ttl: StateTtl | None = None,
        serializer: str = DEFAULT_SERIALIZER,
    ) -> Any:
        """The AggregatingState called ``name``, with an AggregateFunction."""

    @abc.abstractmethod
    def get_namespaced_table(self, name: str) -> NamespacedTable:
        """The runtime's own table ``name`` (names start with ``_weir_``), snapshotted
        and restored with the user's state (timers, window contents); task thread."""

    def get_keys(self, name: str) -> list[Any]:
        """The keys that have a value in state ``name`` in this backend (Flink's
        ``getKeys``), for ``apply_to_keyed_state``. This default reads a snapshot; a
        backend that stores a state under another name (TTL) or can list keys cheaper
        overrides it."""
        groups = self.snapshot().states.get(name) or {}
        return [key for entries in groups.values() for key in entries]

    def clear_key(self, key: Any) -> None:  # noqa: B027 - optional; state may stay
        """Drop every state of ``key`` (BATCH execution, after the key's records ended).
        By default the state stays: a backend whose state is not in memory may keep it."""

    @abc.abstractmethod
    def snapshot(self) -> KeyedStateSnapshot:
        """Capture every state, grouped by key group (task thread; synchronous part)."""

    @abc.abstractmethod
    def restore(self, snapshots: list[KeyedStateSnapshot]) -> None:
        """Load the key groups of ``key_group_range`` from snapshots in the canonical
        form (before any record)."""

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:  # noqa: B027
        """Checkpoint ``checkpoint_id`` completed (task thread); optional hook."""

    def notify_checkpoint_aborted(self, checkpoint_id: int) -> None:  # noqa: B027
        """Checkpoint ``checkpoint_id`` was aborted (task thread); optional hook."""

    def dispose(self) -> None:  # noqa: B027 - optional hook, heap state needs nothing
        """Release resources (files, handles). Idempotent."""
