"""Per-window state for the window operator: trigger state, ``window_state()`` and the
merging window set, all kept in the keyed state backend.

Everything a window operator keeps lives in namespaced backend tables shaped
``{key: {namespace: value}}`` (the namespace is the window), so a checkpoint captures it
by key group with the rest of the keyed state. A value read may be a copy (the rocksdb
backend deserializes it), so every change is put back:

- ``_weir_window_contents``: the window contents (reduced value, accumulator or list);
- ``_weir_window_state_<name>``: the state a trigger reaches through
  ``get_partitioned_state`` and a process window function through ``window_state()``;
- ``_weir_window_merging``: for merging assigners, in namespace None, the dict of each
  in-flight window mapped to the window whose namespace holds its contents (Flink's
  ``MergingWindowSet``).

The state objects implement PyFlink's ValueState/ListState/ReducingState/
AggregatingState/MapState on one (current key, namespace). Descriptors come from the
user's program and are recognised by their attributes, not their classes (the
TaskManager does not import the API package).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from weir.taskmanager.state.backend import KeyedStateBackend, NamespacedTable
from weir.taskmanager.state.heap_states import ListStateContents, MapStateReads

CONTENTS = "_weir_window_contents"
MERGING = "_weir_window_merging"
STATE_PREFIX = "_weir_window_state_"

MISSING: Any = object()


class MergingStateError(TypeError):
    """merge_partitioned_state() on a state that cannot be merged (value or map state)."""


def descriptor_kind(descriptor: Any) -> str:
    """``"reducing"``, ``"aggregating"``, ``"list"``, ``"map"`` or ``"value"``."""
    if hasattr(descriptor, "get_reduce_function"):
        return "reducing"
    if hasattr(descriptor, "get_agg_function"):
        return "aggregating"
    if hasattr(descriptor, "elem_type_info"):
        return "list"
    if hasattr(descriptor, "key_type_info"):
        return "map"
    return "value"


def reduce_callable(function: Any) -> Callable[[Any, Any], Any]:
    """A ReduceFunction's ``reduce`` or the callable itself."""
    reduce = getattr(function, "reduce", None)
    return reduce if callable(reduce) else function  # type: ignore[no-any-return]


def merger(kind: str, function: Any) -> Callable[[Any, Any], Any]:
    """How two namespaces' values of a state of ``kind`` combine (target first)."""
    if kind == "reducing":
        return reduce_callable(function)
    if kind == "aggregating":
        return function.merge  # type: ignore[no-any-return]
    if kind == "list":
        return lambda a, b: a + b
    msg = "The given state descriptor does not refer to a mergeable state (MergingState)"
    raise MergingStateError(msg)


def merge_namespaces(
    table: NamespacedTable,
    key: Any,
    target: Any,
    sources: Any,
    merge: Callable[[Any, Any], Any],
) -> None:
    """Fold the values of ``sources`` into ``target`` and remove the sources (Flink's
    heap ``mergeNamespaces``: the sources in order, then into the target's value)."""
    merged = MISSING
    for source in sources:
        value = table.get(key, source, MISSING)
        if value is MISSING:
            continue
        table.remove(key, source)
        merged = value if merged is MISSING else merge(merged, value)
    if merged is not MISSING:
        current = table.get(key, target, MISSING)
        table.put(key, target, merged if current is MISSING else merge(current, merged))


class _WindowState:
    """One state of the backend's current key in one namespace."""

    __slots__ = ("_backend", "_ns", "_table", "name")

    def __init__(self, backend: KeyedStateBackend, name: str, namespace: Any) -> None:
        self._backend = backend
        self._table = backend.get_namespaced_table(STATE_PREFIX + name)
        self._ns = namespace
        self.name = name

    def _get(self) -> Any:
        return self._table.get(self._backend.current_key, self._ns)

    def _set(self, value: Any) -> None:
        self._table.put(self._backend.current_key, self._ns, value)

    def clear(self) -> None:
        self._table.remove(self._backend.current_key, self._ns)


class WindowValueState(_WindowState):
    __slots__ = ()

    def value(self) -> Any:
        return self._get()

    def update(self, value: Any) -> None:
        if value is None:
            self.clear()
        else:
            self._set(value)


class WindowListState(_WindowState):
    __slots__ = ()

    def get(self) -> list[Any]:
        return ListStateContents(self._get() or ())

    def add(self, value: Any) -> None:
        if value is None:
            msg = f"ListState {self.name!r}: cannot add None"
            raise ValueError(msg)
        current = self._get()
        if current is None:
            self._set([value])
        else:
            current.append(value)
            self._set(current)

    def add_all(self, values: list[Any]) -> None:
        for value in values:
            self.add(value)

    def update(self, values: list[Any] | None) -> None:
        values = list(values or ())
        if values:
            self._set(values)
        else:
            self.clear()

    def __iter__(self) -> Iterator[Any]:
        return iter(self.get())


class WindowReducingState(_WindowState):
    __slots__ = ("_reduce",)

    def __init__(
        self,
        backend: KeyedStateBackend,
        name: str,
        namespace: Any,
        reduce: Callable[[Any, Any], Any],
    ) -> None:
        super().__init__(backend, name, namespace)
        self._reduce = reduce

    def get(self) -> Any:
        return self._get()

    def add(self, value: Any) -> None:
        current = self._get()
        self._set(value if current is None else self._reduce(current, value))


class WindowAggregatingState(_WindowState):
    __slots__ = ("_function",)

    def __init__(
        self, backend: KeyedStateBackend, name: str, namespace: Any, function: Any
    ) -> None:
        super().__init__(backend, name, namespace)
        self._function = function

    def get(self) -> Any:
        accumulator = self._get()
        return None if accumulator is None else self._function.get_result(accumulator)

    def add(self, value: Any) -> None:
        if value is None:
            self.clear()
            return
        accumulator = self._get()
        if accumulator is None:
            accumulator = self._function.create_accumulator()
        self._set(self._function.add(value, accumulator))


class WindowMapState(MapStateReads, _WindowState):
    __slots__ = ()

    def _map(self) -> dict[Any, Any]:
        return self._get() or {}

    def put(self, key: Any, value: Any) -> None:
        current = self._get()
        if current is None:
            self._set({key: value})
        else:
            current[key] = value
            self._set(current)

    def put_all(self, dict_value: dict[Any, Any]) -> None:
        for key, value in dict_value.items():
            self.put(key, value)

    def remove(self, key: Any) -> None:
        current = self._get()
        if current is not None:
            current.pop(key, None)
            if current:
                self._set(current)
            else:
                self.clear()


def state_name(descriptor: Any) -> str:
    """The name of a state descriptor (PyFlink's ``get_name()``, or its ``name``)."""
    return descriptor.get_name() if hasattr(descriptor, "get_name") else descriptor.name  # type: ignore[no-any-return]


def window_state(backend: KeyedStateBackend, descriptor: Any, namespace: Any) -> Any:
    """The state of ``descriptor`` for the backend's current key in ``namespace``."""
    name = state_name(descriptor)
    kind = descriptor_kind(descriptor)
    if kind == "reducing":
        return WindowReducingState(
            backend, name, namespace, reduce_callable(descriptor.get_reduce_function())
        )
    if kind == "aggregating":
        return WindowAggregatingState(backend, name, namespace, descriptor.get_agg_function())
    if kind == "list":
        return WindowListState(backend, name, namespace)
    if kind == "map":
        return WindowMapState(backend, name, namespace)
    return WindowValueState(backend, name, namespace)


def merge_window_state(
    backend: KeyedStateBackend, descriptor: Any, target: Any, sources: Any
) -> None:
    """Merge the ``descriptor`` state of the ``sources`` namespaces into ``target``."""
    kind = descriptor_kind(descriptor)
    if kind == "reducing":
        merge = merger(kind, descriptor.get_reduce_function())
    elif kind == "aggregating":
        merge = merger(kind, descriptor.get_agg_function())
    else:
        merge = merger(kind, None)
    name = state_name(descriptor)
    merge_namespaces(
        backend.get_namespaced_table(STATE_PREFIX + name),
        backend.current_key,
        target,
        sources,
        merge,
    )


class PerWindowStateStore:
    """``ProcessWindowFunction.Context.window_state()``: state of the key and window.

    ``rename``, when given, names a state's restored windows as this operator's path does
    (``window_namespaces.rename_windows``); it runs on each state's table the first time
    the state is asked for, before anything reads or writes it there."""

    __slots__ = ("_backend", "_rename", "_renamed", "namespace")

    def __init__(
        self,
        backend: KeyedStateBackend,
        rename: Callable[[NamespacedTable], None] | None = None,
    ) -> None:
        self._backend = backend
        self._rename = rename
        self._renamed: set[str] = set()
        self.namespace: Any = None

    def _state(self, descriptor: Any) -> Any:
        if self._rename is not None:
            name = state_name(descriptor)
            if name not in self._renamed:
                self._rename(self._backend.get_namespaced_table(STATE_PREFIX + name))
                self._renamed.add(name)
        return window_state(self._backend, descriptor, self.namespace)

    get_state = get_list_state = get_map_state = _state
    get_reducing_state = get_aggregating_state = _state


class MergingWindowStateStore:
    """``window_state()`` of merging (session) windows: not available, as in Flink."""

    __slots__ = ("namespace",)

    def __init__(self) -> None:
        self.namespace: Any = None

    def _state(self, descriptor: Any) -> Any:
        msg = (
            "Per-window state is not allowed when using merging windows: session windows "
            "merge, so there is no one window to hold it; use global_state() instead"
        )
        raise MergingStateError(msg)

    get_state = get_list_state = get_map_state = _state
    get_reducing_state = get_aggregating_state = _state


class _MergeResults:
    """The callback a merging assigner reports its merges to."""

    __slots__ = ("results",)

    def __init__(self) -> None:
        self.results: dict[Any, Any] = {}

    def merge(self, to_be_merged: Any, merge_result: Any) -> None:
        self.results[merge_result] = to_be_merged


MergeFunction = Callable[[Any, Any, Any, list[Any]], None]
"""``merge(merge_result, merged_windows, state_window_result, merged_state_windows)``."""


def add_window(
    assigner: Any, mapping: dict[Any, Any], new_window: Any, merge_function: MergeFunction
) -> Any:
    """Add ``new_window`` to the in-flight windows ``mapping`` (window -> state window),
    merging as the assigner says; returns the window ``new_window`` ended up in. Merges
    that do not involve ``new_window`` happen too (Flink's ``MergingWindowSet.addWindow``).
    """
    windows = [*mapping, new_window]
    callback = _MergeResults()
    assigner.merge_windows(windows, callback)
    result_window = new_window
    merged_new_window = False
    for merge_result, merged_windows in callback.results.items():
        if new_window in merged_windows:
            merged_new_window = True
            merged_windows.remove(new_window)
            result_window = merge_result
        merged_state_window = mapping[next(iter(merged_windows))]
        merged_state_windows = [mapping.pop(w) for w in list(merged_windows) if w in mapping]
        mapping[merge_result] = merged_state_window
        merged_state_windows.remove(merged_state_window)
        if merge_result not in merged_windows or len(merged_windows) != 1:
            merge_function(merge_result, merged_windows, merged_state_window, merged_state_windows)
    if not callback.results or (result_window == new_window and not merged_new_window):
        mapping[result_window] = result_window
    return result_window
