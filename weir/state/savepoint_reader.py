"""A Python reader of savepoints and retained checkpoints (what Flink's State Processor
API does in Java): which operators hold state, and that state as Python objects.

It reads the canonical formats the tasks write, straight from the files, with no
cluster: keyed state is key-group blocks of ``(state name, key, value)`` triples
(``KeyGroupsStateHandle``), operator state a stream of length-prefixed elements
addressed by ``OperatorStatePartition`` offsets. Values are what the hashmap backend
keeps: a list for a ListState, a dict for a MapState; a state with a TTL is stored as
``_weir_ttl_{name}`` with ``(value, last_access_ms)`` pairs, which the reader unwraps.
Tables of the runtime (window contents, timers) are named ``_weir_...`` and left out
of ``keyed_state_names`` (``keyed_state`` still reads them by name). The windows a
built-in aggregate held as columns are stored as Arrow column blocks in the same
key-group blocks (``weir.core.column_blocks``); ``keyed_state`` reads their rows as the
entries ``{window_start: accumulator}`` the dict form holds, ``keyed_state_columns``
reads them as one Arrow table.

    sp = read_savepoint("/savepoints/savepoint-3f2a1b-0c9d8e7f6a5b")
    for op in sp.operators:
        print(op.uid, op.parallelism, op.keyed_states)
    for key, count in sp.keyed_state("counter", "count"):
        ...
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from weir.core.checkpoint import (
    CheckpointMetadata,
    IncrementalKeyGroupsStateHandle,
    OperatorState,
    OperatorStateDistributionMode,
    read_state,
)
from weir.core.checkpoint.savepoint_storage import read_savepoint_metadata
from weir.core.errors import CheckpointError
from weir.core.serializers import deserialize_batch

__all__ = ["OperatorInfo", "SavepointReader", "read_savepoint"]

_LENGTH = struct.Struct(">I")
_TTL_PREFIX = "_weir_ttl_"
_RUNTIME_PREFIX = "_weir_"
_RAW_FUNCTION_STATE = "_weir_function_state"
_MODE_LABELS = {
    OperatorStateDistributionMode.SPLIT_DISTRIBUTE: "LIST",
    OperatorStateDistributionMode.UNION: "UNION_LIST",
    OperatorStateDistributionMode.BROADCAST: "BROADCAST",
}


@dataclass(frozen=True, slots=True)
class OperatorInfo:
    """One operator of a savepoint: ``uid`` is empty when it had none (then only its
    ``operator_id``, derived from the graph, names it)."""

    uid: str
    operator_id: str
    parallelism: int
    max_parallelism: int
    keyed_states: dict[str, str]
    """State name -> kind (``VALUE``, ``LIST``, ``MAP``, ``REDUCING``, ``AGGREGATING``)."""
    operator_states: dict[str, str]
    """State name -> ``LIST``, ``UNION_LIST`` or ``BROADCAST``."""
    has_source_position: bool


def read_savepoint(path: str) -> SavepointReader:
    """Open the savepoint (or retained checkpoint) at ``path``: its directory or its
    ``_metadata``, any fsspec URL. Raises CheckpointError saying what is wrong when
    there is none there."""
    return SavepointReader(path, read_savepoint_metadata(path))


class SavepointReader:
    """What ``read_savepoint`` returns. Reads files lazily, one operator at a time."""

    def __init__(self, path: str, metadata: CheckpointMetadata) -> None:
        self.path = path
        self.metadata = metadata
        self.operators = [_info(state) for state in metadata.operator_states.values()]

    @property
    def checkpoint_id(self) -> int:
        return self.metadata.checkpoint_id

    @property
    def job_id(self) -> str:
        return str(self.metadata.job_id)

    def operator(self, uid: str) -> OperatorInfo:
        """The operator with ``uid`` (or with this operator id). KeyError naming the
        operators there are when there is none."""
        wanted = {uid, hashlib.md5(uid.encode("utf-8"), usedforsecurity=False).hexdigest()}
        for info in self.operators:
            if info.uid == uid or info.operator_id in wanted:
                return info
        known = ", ".join(i.uid or i.operator_id for i in self.operators) or "none"
        msg = f"no operator with uid {uid!r} in the savepoint at {self.path}; it has: {known}"
        raise KeyError(msg)

    def keyed_state(self, uid: str, name: str) -> Iterator[tuple[Any, Any]]:
        """``(key, value)`` of every key that has state ``name`` in operator ``uid``, key
        group by key group. A value is what the state holds for the key: the value of a
        ValueState (and of a ReducingState or AggregatingState: its accumulator), a list
        for a ListState, a dict for a MapState. Entries of namespaced states (windows)
        are ``{namespace: value}``."""
        info = self.operator(uid)
        state = self.metadata.operator_states[info.operator_id]  # type: ignore[index]
        if name not in info.keyed_states and not name.startswith(_RUNTIME_PREFIX):
            known = ", ".join(sorted(info.keyed_states)) or "none"
            msg = f"operator {uid!r} has no keyed state {name!r}; it has: {known}"
            raise KeyError(msg)
        return self._keyed_entries(uid, state, name, info.keyed_states.get(name, ""))

    def _keyed_entries(
        self, uid: str, state: OperatorState, name: str, kind: str
    ) -> Iterator[tuple[Any, Any]]:
        for _, subtask in sorted(state.subtask_states.items()):
            for handle in subtask.managed_keyed_state:
                if isinstance(handle, IncrementalKeyGroupsStateHandle):
                    msg = (
                        f"operator {uid!r} has its keyed state as a native rocksdb snapshot "
                        f"(an incremental checkpoint) at {self.path}; the reader reads the "
                        "canonical form: take a savepoint of the job (weir savepoint) and "
                        "read that"
                    )
                    raise CheckpointError(msg)
                for block in _key_group_blocks(handle):
                    yield from _group_entries(deserialize_batch(block), name, kind)

    def keyed_state_columns(self, uid: str, name: str) -> Any:
        """The column blocks of runtime table ``name`` of operator ``uid`` (the windows a
        built-in aggregate held as columns, ``weir.core.column_blocks``) as one
        ``pyarrow.Table`` of ``key``, ``window_start``, ``acc`` (and an average's
        ``count``), read without a Python object per key. Entries the table stored key
        by key are not in it; ``keyed_state`` reads both."""
        import pyarrow as pa  # noqa: PLC0415 (only this read needs it)

        from weir.core.column_blocks import decode_block  # noqa: PLC0415

        info = self.operator(uid)
        state = self.metadata.operator_states[info.operator_id]  # type: ignore[index]
        batches = []
        for _, subtask in sorted(state.subtask_states.items()):
            for handle in subtask.managed_keyed_state:
                if isinstance(handle, IncrementalKeyGroupsStateHandle):
                    continue  # native rocksdb state holds no column blocks
                for block in _key_group_blocks(handle):
                    for entry in deserialize_batch(block):
                        if len(entry) == 2 and entry[0] == name:
                            batches.append(decode_block(entry[1]))
        if not batches:
            return None
        return pa.Table.from_batches(batches)

    def list_state(self, uid: str, name: str) -> list[Any]:
        """Every element of list state ``name``, of every subtask in subtask order (what
        a restore hands out again, split)."""
        return [e for elements in self._operator_state(uid, name) for e in elements]

    def union_list_state(self, uid: str, name: str) -> list[Any]:
        """Every element of union list state ``name`` of every subtask, in subtask order
        (what a restore gives every subtask)."""
        return self.list_state(uid, name)

    def broadcast_state(self, uid: str, name: str) -> dict[Any, Any]:
        """The entries of broadcast state ``name`` (every subtask holds the same copy;
        this is the first subtask's)."""
        for elements in self._operator_state(uid, name):
            for entries in elements:
                return dict(entries)
        return {}

    def _operator_state(self, uid: str, name: str) -> list[list[Any]]:
        """Per subtask (in order), the elements of operator state ``name`` it wrote."""
        info = self.operator(uid)
        if name not in info.operator_states:
            known = ", ".join(sorted(info.operator_states)) or "none"
            msg = f"operator {uid!r} has no operator state {name!r}; it has: {known}"
            raise KeyError(msg)
        state = self.metadata.operator_states[info.operator_id]  # type: ignore[index]
        return list(self._operator_elements(state, name))

    @staticmethod
    def _operator_elements(state: OperatorState, name: str) -> Iterator[list[Any]]:
        for _, subtask in sorted(state.subtask_states.items()):
            for handle in subtask.managed_operator_state:
                partitions = [p for p in handle.partitions if p.name == name]
                if not partitions:
                    continue
                data = read_state(handle.handle)
                yield [_element_at(data, offset) for p in partitions for offset in p.offsets]

    def describe(self) -> str:
        """A summary, as ``weir savepoint --inspect`` prints it."""
        kind = self.metadata.checkpoint_type.value.lower()
        lines = [
            f"{kind.capitalize()} {self.checkpoint_id} of job {self.job_id} at {self.path}",
            f"{len(self.operators)} operators with state:",
        ]
        for info in self.operators:
            label = f"uid {info.uid!r}" if info.uid else f"operator id {info.operator_id}"
            lines.append(
                f"  {label}: parallelism {info.parallelism}, max parallelism {info.max_parallelism}"
            )
            for name, state_kind in sorted(info.keyed_states.items()):
                lines.append(f"    keyed state {name!r}: {state_kind}")
            for name, mode in sorted(info.operator_states.items()):
                lines.append(f"    operator state {name!r}: {mode}")
            if info.has_source_position:
                lines.append("    source position")
        return "\n".join(lines)


def _info(state: OperatorState) -> OperatorInfo:
    keyed: dict[str, str] = {}
    operator: dict[str, str] = {}
    source = False
    for subtask in state.subtask_states.values():
        source = source or bool(subtask.source_reader_state or subtask.source_split_state)
        for handle in subtask.managed_keyed_state:
            for meta in handle.state_meta:
                name = meta.name.removeprefix(_TTL_PREFIX)
                if not name.startswith(_RUNTIME_PREFIX):
                    keyed[name] = meta.kind
        for op_handle in subtask.managed_operator_state:
            for partition in op_handle.partitions:
                if partition.name != _RAW_FUNCTION_STATE:
                    operator[partition.name] = _MODE_LABELS[partition.mode]
    return OperatorInfo(
        uid=state.uid,
        operator_id=str(state.operator_id),
        parallelism=state.parallelism,
        max_parallelism=state.max_parallelism,
        keyed_states=keyed,
        operator_states=operator,
        has_source_position=source,
    )


def _group_entries(entries: list[Any], name: str, kind: str) -> Iterator[tuple[Any, Any]]:
    """``(key, value)`` of state ``name`` in one key group's block: its ``(table, key,
    value)`` triples, and the rows of its ``(table, column block)`` pairs as the entries
    ``{window_start: accumulator}`` they are."""
    tables = {name, _TTL_PREFIX + name}
    blocks = [entry[1] for entry in entries if len(entry) == 2 and entry[0] == name]
    if not blocks:
        for entry in entries:
            if len(entry) == 3 and entry[0] in tables:
                table, key, value = entry
                yield key, _without_ttl(value, kind) if table != name else value
        return
    from weir.core.column_blocks import decode_block, window_entries  # noqa: PLC0415

    merged: dict[Any, Any] = {}
    for entry in entries:
        if len(entry) == 3 and entry[0] == name:
            merged[entry[1]] = dict(entry[2])
    for key, per in window_entries(decode_block(b) for b in blocks).items():
        merged.setdefault(key, {}).update(per)
    yield from merged.items()


def _without_ttl(value: Any, kind: str) -> Any:
    """A TTL state's stored value without its last-access timestamps."""
    if kind == "LIST":
        return [element for element, _ in value]
    if kind == "MAP":
        return {k: v for k, (v, _) in value.items()}
    return value[0]


def _element_at(data: bytes, offset: int) -> Any:
    (length,) = _LENGTH.unpack_from(data, offset)
    start = offset + _LENGTH.size
    return deserialize_batch(memoryview(data)[start : start + length])[0]


def _key_group_blocks(handle: Any) -> Iterator[bytes]:
    """The bytes of each key group a canonical keyed state handle holds (empty ones
    left out)."""
    data = read_state(handle.handle)
    offsets = list(handle.offsets) or [0]
    for i, start in enumerate(offsets):
        end = offsets[i + 1] if i + 1 < len(offsets) else len(data)
        if end > start:
            yield data[start:end]
