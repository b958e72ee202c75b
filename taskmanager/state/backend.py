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
Next to it a snapshot may carry *column blocks* (``KeyedStateSnapshot.columns``): a
runtime table's entries as Arrow record batches per key group
(``weir.core.column_blocks``), which the hashmap backend takes from a window operator
that holds its windows as columns (``NamespacedTable.put_columns``). Each block's rows
are entries of the dict form, so a backend that keeps no columns restores them as
entries (``with_columns_as_entries``).
The asynchronous write is the caller's business. A backend may also offer a native
snapshot (``rocksdb``: incremental, SST files) that only it reads directly.
"""

from __future__ import annotations

import abc
import enum
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from weir.core.errors import StateMigrationError, WeirError
from weir.core.key_groups import PyFlinkKeyHasher
from weir.core.state_ttl import StateTtl
from weir.taskmanager.state.ttl import (
    TtlAggregatingState,
    TtlListState,
    TtlMapState,
    TtlReducingState,
    TtlValueState,
)


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


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
    BLOCKS = "BLOCKS"
    """A runtime table's values held in columnar blocks, one per key group and
    namespace (``rocksdb``: ``weir.taskmanager.state.rocksdb_blocks``); its canonical
    form is the namespaced table it stands for, key by key."""

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
            "BLOCKS": "runtime table of blocks",
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
    columns: Mapping[str, Mapping[int, Sequence[Any]]] = field(default_factory=dict)
    """``{table_name: {key_group: [pyarrow.RecordBatch, ...]}}``: entries of runtime
    tables as column blocks (``weir.core.column_blocks``), besides those in ``states``."""


def with_columns_as_entries(snapshot: KeyedStateSnapshot) -> KeyedStateSnapshot:
    """``snapshot`` with its column blocks turned into entries of the dict form (per key,
    one Python object per key and window), for a backend that keeps no columns."""
    if not snapshot.columns:
        return snapshot
    from weir.core.column_blocks import window_entries  # noqa: PLC0415 (pyarrow)

    states = {
        name: {g: dict(e) for g, e in groups.items()} for name, groups in snapshot.states.items()
    }
    for name, groups in snapshot.columns.items():
        by_group = states.setdefault(name, {})
        for group, blocks in groups.items():
            entries = by_group.setdefault(group, {})
            for key, per in window_entries(blocks).items():
                known = entries.get(key)
                entries[key] = per if known is None else {**known, **per}
    return KeyedStateSnapshot(snapshot.max_parallelism, states, snapshot.meta)


TTL_TABLE_PREFIX = "_weir_ttl_"


def ttl_table(name: str) -> str:
    """The table of state ``name`` with a TTL. A TTL state stores ``(value,
    last_access_ms)`` where a plain one stores the value; the two forms live (and are
    snapshotted) under different names, so that a restore into the other form is caught
    when the state is registered instead of misread later."""
    return f"{TTL_TABLE_PREFIX}{name}"


def state_table(name: str, ttl: StateTtl | None) -> str:
    """The table of state ``name`` registered with ``ttl`` (or without one)."""
    return name if ttl is None else ttl_table(name)


def check_reregistration(name: str, kind: StateKind, state: Any, ttl: StateTtl | None) -> None:
    """State ``name``, registered as ``state``, is asked for again with ``ttl``: refuse it
    (StateAccessError) with a TTL when it was registered without one, or the other way
    round, or with another TTL."""
    registered = getattr(state, "ttl", None)
    if (ttl is None) != (registered is None):
        label = kind.label
        was, now = (f"{label} with a TTL", label) if ttl is None else (label, f"{label} with a TTL")
        msg = f"state {name!r} is already registered as a {was}; a {now} needs another name"
        raise StateAccessError(msg)
    if ttl is not None and registered != ttl:
        msg = (
            f"state {name!r} is already registered with {registered}; got another "
            f"TTL for it ({ttl}): give both descriptors the same StateTtlConfig, or "
            "give the state with the other TTL another name"
        )
        raise StateAccessError(msg)


def ttl_form_changed(name: str, ttl: StateTtl | None) -> StateMigrationError:
    """The error for state ``name`` restored in one form (with or without a TTL) and now
    registered in the other."""
    was, now = ("with", "without") if ttl is None else ("without", "with")
    msg = (
        f"state {name!r} was restored from a snapshot taken {was} a TTL and is "
        f"now registered {now} one; its stored values cannot be read in the "
        "other form. Set the descriptor's TTL as it was when the snapshot was "
        "taken, or rename the state to start it empty"
    )
    return StateMigrationError(msg)


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


# The TTL kind of each state kind (weir.taskmanager.state.ttl: one policy, both backends).
_TTL_KINDS: dict[StateKind, Any] = {
    StateKind.VALUE: TtlValueState,
    StateKind.LIST: TtlListState,
    StateKind.MAP: TtlMapState,
    StateKind.REDUCING: TtlReducingState,
    StateKind.AGGREGATING: TtlAggregatingState,
}


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

    def put_namespace(self, namespace: Any, values: Mapping[Any, Any]) -> None:
        """``put(key, namespace, value)`` for every ``key: value`` of ``values``: one
        call for a whole window's contents, which a backend may write in bulk."""
        put = self.put
        for key, value in values.items():
            put(key, namespace, value)

    @abc.abstractmethod
    def remove(self, key: Any, namespace: Any) -> None:
        """Drop the value of ``key`` in ``namespace``; no error when there is none."""

    def put_columns(self, blocks: Sequence[Any]) -> bool:
        """Let the next snapshot take these entries as column blocks (``pyarrow.RecordBatch``
        of ``weir.core.column_blocks``, any keys in any order), replacing those given
        before; an empty list withdraws them. False, and nothing kept, when the backend
        stores no columns (the caller then puts the entries one by one)."""
        return not blocks

    def take_columns(self) -> list[Any]:
        """The column blocks restored into this table (of the key groups this backend
        owns), handed over once: the caller now holds their entries."""
        return []

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
        clock_ms: Callable[[], int] | None = None,
    ) -> None:
        self.max_parallelism = max_parallelism
        self.key_group_range = key_group_range
        # The same key -> key group function the senders route with.
        self.key_hasher = key_hasher or PyFlinkKeyHasher()
        self.current_key = None
        self.clock_ms: Callable[[], int] = clock_ms or _wall_clock_ms
        """The processing-time clock of state TTL (the task's; the wall clock by default)."""
        self._states: dict[str, Any] = {}
        # By table name: what each registered state is, and what restored tables were.
        self._meta: dict[str, StateMeta] = {}
        self._restored_meta: dict[str, StateMeta] = {}
        # Per table of a TTL state with cleanup_full_snapshot: what of a stored value is
        # still alive at a given time (None when nothing is).
        self._snapshot_filters: dict[str, Callable[[Any, int], Any]] = {}

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

    def get_value_state(
        self, name: str, ttl: StateTtl | None = None, serializer: str = DEFAULT_SERIALIZER
    ) -> ValueState:
        """The ValueState called ``name``."""
        return self._register(name, StateKind.VALUE, ttl, serializer)  # type: ignore[no-any-return]

    def get_list_state(
        self, name: str, ttl: StateTtl | None = None, serializer: str = DEFAULT_SERIALIZER
    ) -> Any:
        """The ListState called ``name``."""
        return self._register(name, StateKind.LIST, ttl, serializer)

    def get_map_state(
        self, name: str, ttl: StateTtl | None = None, serializer: str = DEFAULT_SERIALIZER
    ) -> Any:
        """The MapState called ``name``."""
        return self._register(name, StateKind.MAP, ttl, serializer)

    def get_reducing_state(
        self,
        name: str,
        reduce: Callable[[Any, Any], Any],
        ttl: StateTtl | None = None,
        serializer: str = DEFAULT_SERIALIZER,
    ) -> Any:
        """The ReducingState called ``name``, folding with ``reduce``."""
        return self._register(name, StateKind.REDUCING, ttl, serializer, function=reduce)

    def get_aggregating_state(
        self,
        name: str,
        function: Any,
        ttl: StateTtl | None = None,
        serializer: str = DEFAULT_SERIALIZER,
    ) -> Any:
        """The AggregatingState called ``name``, with an AggregateFunction."""
        return self._register(name, StateKind.AGGREGATING, ttl, serializer, function=function)

    # --- registration: written once, over three hooks of each backend -----------------

    def _register(
        self,
        name: str,
        kind: StateKind,
        ttl: StateTtl | None,
        serializer: str,
        *,
        function: Any = None,
    ) -> Any:
        """State ``name`` of ``kind``, made on its first registration and the same object
        after: the backend's plain kind without a TTL, the ``ttl`` kind over the
        backend's storage with one (``function``: the reduce or aggregate function).
        Refuses another kind or serializer than registered or restored, the other form
        (with or without a TTL) than registered or restored, and another TTL."""
        wanted = StateMeta(kind, serializer)
        state = self._states.get(name)
        if state is not None:
            registered = self._meta[state_table(name, getattr(state, "ttl", None))]
            check_registration(name, wanted, registered, None)
            check_reregistration(name, kind, state, ttl)
            return state
        table = state_table(name, ttl)
        check_registration(name, wanted, None, self._restored_meta.get(table))
        if self._holds_table(ttl_table(name) if ttl is None else name):
            raise ttl_form_changed(name, ttl)
        storage = self._table_storage(table)
        if ttl is None:
            state = self._plain_state(kind, name, storage, function)
        else:
            ttl_kind = _TTL_KINDS[kind]
            ttl_storage = self._ttl_storage(kind, storage)
            state = (
                ttl_kind(name, ttl_storage, ttl, self.clock_ms)
                if function is None
                else ttl_kind(name, ttl_storage, ttl, self.clock_ms, function)
            )
            if ttl.cleanup_full_snapshot:
                self._snapshot_filters[table] = state.unexpired
        self._states[name] = state
        self._meta[table] = wanted
        return state

    @abc.abstractmethod
    def _holds_table(self, table: str) -> bool:
        """Whether ``table`` holds restored values (then a state may not take the other
        form of it)."""

    @abc.abstractmethod
    def _table_storage(self, table: str) -> Any:
        """Where the values of ``table`` live (a dict, a column family), made if needed."""

    _plain_kinds: ClassVar[Mapping[StateKind, Any]]
    """The backend's class of each state kind without a TTL, made as ``(backend, name,
    storage)`` (plus the function of Reducing and Aggregating state)."""
    _ttl_storages: ClassVar[Mapping[StateKind, Any]]
    """The backend's ``weir.taskmanager.state.ttl`` storage class of each state kind
    with a TTL, made as ``(backend, storage)``."""

    def _plain_state(self, kind: StateKind, name: str, storage: Any, function: Any) -> Any:
        plain = self._plain_kinds[kind]
        return (
            plain(self, name, storage) if function is None else plain(self, name, storage, function)
        )

    def _ttl_storage(self, kind: StateKind, storage: Any) -> Any:
        return self._ttl_storages[kind](self, storage)

    @abc.abstractmethod
    def get_namespaced_table(self, name: str) -> NamespacedTable:
        """The runtime's own table ``name`` (names start with ``_weir_``), snapshotted
        and restored with the user's state (timers, window contents); task thread."""

    def unblock_table(self, name: str) -> None:  # noqa: B027 - only rocksdb keeps blocks
        """Put what a restore brought of table ``name`` in columnar blocks (an incremental
        rocksdb checkpoint of an operator that kept them so) into table ``name`` key by
        key, for an operator that keeps them so, and drop the blocks (task thread,
        before any record). A backend that keeps no blocks has nothing to do."""

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
