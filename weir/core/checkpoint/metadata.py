"""The ``_metadata`` file of a checkpoint: which state handles make up checkpoint *n*.

Layout (all integers big-endian)::

    8 bytes   magic  b"WEIRCKPT"
    2 bytes   format version (1)
    4 bytes   length of the body
    4 bytes   zlib.crc32 of the body
    body      UTF-8 JSON: {"format": "weir-checkpoint-metadata", "version": 1, ...}

The body is plain JSON of the handles (inline state as base64), never a pickle, so a
checkpoint can be inspected with any JSON tool and restoring it runs no stored code. The
header catches truncation and corruption before the JSON is parsed.

A savepoint's ``_metadata`` names the files in its own directory relative to it
(``{"relative": "name"}`` in place of ``{"path": url}``, Flink's
``RelativeFileStateHandle``), so the directory can be moved or copied and restored from
its new place: ``decode_metadata`` resolves them against the directory it read from.
"""

from __future__ import annotations

import base64
import enum
import json
import struct
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from weir.core.checkpoint.state_handles import (
    IncrementalKeyGroupsStateHandle,
    InputChannelStateHandle,
    KeyedStateHandle,
    KeyGroupRange,
    KeyGroupsStateHandle,
    OperatorStateDistributionMode,
    OperatorStateHandle,
    OperatorStatePartition,
    OperatorSubtaskState,
    ResultSubpartitionStateHandle,
    SharedFile,
    StateMetaInfo,
    StreamStateHandle,
    TaskStateSnapshot,
)
from weir.core.errors import CorruptCheckpointError
from weir.core.ids import JobId, OperatorId

MAGIC = b"WEIRCKPT"
FORMAT_VERSION = 1
_FORMAT_NAME = "weir-checkpoint-metadata"
_HEADER = struct.Struct(">8sHII")


class CheckpointType(enum.Enum):
    """Flink's CheckpointType: periodic checkpoints or user-triggered savepoints."""

    CHECKPOINT = "CHECKPOINT"
    SAVEPOINT = "SAVEPOINT"


@dataclass(frozen=True, slots=True)
class OperatorState:
    """The state of one operator across its subtasks: subtask index -> state."""

    operator_id: OperatorId
    parallelism: int
    max_parallelism: int
    subtask_states: Mapping[int, OperatorSubtaskState] = field(default_factory=dict)
    finished_subtasks: frozenset[int] = frozenset()
    """Subtasks that had finished (their final checkpoint completed, they exited) when
    the checkpoint was taken: restored as finished, never run again. They hold no state."""
    uid: str = ""
    """The operator's uid when it had one (``operator_id`` is derived from it)."""

    @property
    def state_size(self) -> int:
        return sum(state.state_size for state in self.subtask_states.values())

    @property
    def is_fully_finished(self) -> bool:
        """Every subtask had finished (Flink's FullyFinishedOperatorState)."""
        return len(self.finished_subtasks) == self.parallelism


@dataclass(frozen=True, slots=True)
class CheckpointMetadata:
    job_id: JobId
    checkpoint_id: int
    trigger_timestamp_ms: int
    completion_timestamp_ms: int
    checkpoint_type: CheckpointType
    operator_states: Mapping[OperatorId, OperatorState] = field(default_factory=dict)

    @property
    def state_size(self) -> int:
        return sum(state.state_size for state in self.operator_states.values())

    @property
    def checkpointed_size(self) -> int:
        """Bytes this checkpoint wrote: its state size less the shared files it refers to
        that earlier checkpoints uploaded (incremental checkpoints)."""
        return sum(
            subtask.checkpointed_size
            for operator in self.operator_states.values()
            for subtask in operator.subtask_states.values()
        )

    def shared_paths(self) -> set[str]:
        """The files in ``shared/`` this checkpoint refers to."""
        return {
            path
            for operator in self.operator_states.values()
            for subtask in operator.subtask_states.values()
            for path in subtask.shared_paths()
        }

    def stream_handles(self) -> list[StreamStateHandle]:
        return [
            handle
            for operator in self.operator_states.values()
            for subtask in operator.subtask_states.values()
            for handle in subtask.stream_handles()
        ]


# -- encoding ------------------------------------------------------------------------


def encode_metadata(metadata: CheckpointMetadata, *, relative_to: str | None = None) -> bytes:
    """The ``_metadata`` bytes of ``metadata``. With ``relative_to`` (the URL of the
    directory the file is written to), files inside that directory are named relative
    to it (a savepoint)."""
    doc = {
        "format": _FORMAT_NAME,
        "version": FORMAT_VERSION,
        "job_id": metadata.job_id,
        "checkpoint_id": metadata.checkpoint_id,
        "trigger_timestamp_ms": metadata.trigger_timestamp_ms,
        "completion_timestamp_ms": metadata.completion_timestamp_ms,
        "checkpoint_type": metadata.checkpoint_type.value,
        "operators": [_operator_to_json(op) for op in metadata.operator_states.values()],
    }
    if relative_to is not None:
        prefix = relative_to.rstrip("/") + "/"
        _rewrite_handles(doc, lambda h: _to_relative(h, prefix))
    body = json.dumps(doc, sort_keys=True, separators=(",", ":")).encode("utf-8")
    return _HEADER.pack(MAGIC, FORMAT_VERSION, len(body), zlib.crc32(body)) + body


_MALFORMED = (ValueError, LookupError, TypeError, AttributeError, ArithmeticError)
"""What reading a document of the wrong shape raises: a missing member or index, a value
of the wrong type, an integer out of range (``int(Infinity)``), bad base64 (a ValueError)."""


def decode_metadata(data: bytes, *, source: str = "_metadata") -> CheckpointMetadata:
    """Parse ``_metadata`` bytes. Raises CorruptCheckpointError naming ``source``."""
    if len(data) < _HEADER.size:
        msg = f"{source} is cut short ({len(data)} bytes); it is not a complete checkpoint"
        raise CorruptCheckpointError(msg, path=source)
    magic, version, length, checksum = _HEADER.unpack_from(data)
    if magic != MAGIC:
        msg = f"{source} is not a Weir checkpoint metadata file (magic {magic!r})"
        raise CorruptCheckpointError(msg, path=source)
    if version != FORMAT_VERSION:
        msg = (
            f"{source} has metadata format version {version}; this Weir reads version "
            f"{FORMAT_VERSION}: restore it with the Weir release that wrote it"
        )
        raise CorruptCheckpointError(msg, path=source)
    body = data[_HEADER.size :]
    if len(body) != length or zlib.crc32(body) != checksum:
        msg = f"{source} is corrupt: its length or checksum does not match its header"
        raise CorruptCheckpointError(msg, path=source)
    try:
        doc = json.loads(body.decode("utf-8"))
        if doc.get("format") != _FORMAT_NAME:
            msg = f"unexpected format {doc.get('format')!r}"
            raise ValueError(msg)
        base = metadata_directory(source)
        _rewrite_handles(doc, lambda h: _from_relative(h, base))
        operators = [_operator_from_json(op) for op in doc["operators"]]
        return CheckpointMetadata(
            job_id=JobId(doc["job_id"]),
            checkpoint_id=int(doc["checkpoint_id"]),
            trigger_timestamp_ms=int(doc["trigger_timestamp_ms"]),
            completion_timestamp_ms=int(doc["completion_timestamp_ms"]),
            checkpoint_type=CheckpointType(doc["checkpoint_type"]),
            operator_states={op.operator_id: op for op in operators},
        )
    except _MALFORMED as exc:
        msg = f"{source} cannot be decoded: {exc}"
        raise CorruptCheckpointError(msg, path=source) from exc


def metadata_directory(pointer: str) -> str:
    """The directory of a ``_metadata`` file, given the file or the directory."""
    pointer = pointer.rstrip("/")
    suffix = "/_metadata"
    return pointer[: -len(suffix)] if pointer.endswith(suffix) else pointer


def _rewrite_handles(doc: Any, rewrite: Callable[[dict[str, Any]], None]) -> None:
    """Apply ``rewrite`` to every stream handle (a dict with a ``checksum``) in ``doc``."""
    if isinstance(doc, dict):
        if "checksum" in doc and "size" in doc:
            rewrite(doc)
            return
        for value in doc.values():
            _rewrite_handles(value, rewrite)
    elif isinstance(doc, list):
        for value in doc:
            _rewrite_handles(value, rewrite)


def _to_relative(handle: dict[str, Any], prefix: str) -> None:
    path = handle.get("path")
    if isinstance(path, str) and path.startswith(prefix) and "/" not in path[len(prefix) :]:
        del handle["path"]
        handle["relative"] = path[len(prefix) :]


def _from_relative(handle: dict[str, Any], base: str) -> None:
    relative = handle.pop("relative", None)
    if relative is not None:
        if (
            not isinstance(relative, str)
            or not relative
            or "/" in relative
            or relative in {".", ".."}
        ):
            msg = f"bad relative state file name {relative!r}"
            raise ValueError(msg)
        handle["path"] = f"{base}/{relative}"


def encode_task_state(snapshot: TaskStateSnapshot) -> bytes:
    """A task's subtask states as UTF-8 JSON, in the ``_metadata`` encoding: what a task
    acknowledges and what a redeployed task is given to restore."""
    doc = {str(op_id): _subtask_to_json(state) for op_id, state in snapshot.subtask_states.items()}
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode("utf-8")


def decode_task_state(data: bytes) -> TaskStateSnapshot:
    """The inverse of ``encode_task_state``. Raises CorruptCheckpointError."""
    try:
        doc = json.loads(data.decode("utf-8"))
        return TaskStateSnapshot(
            {OperatorId(op_id): _subtask_from_json(state) for op_id, state in doc.items()}
        )
    except _MALFORMED as exc:
        msg = f"a task state cannot be decoded: {exc}"
        raise CorruptCheckpointError(msg, path="<task state>") from exc


def _operator_to_json(op: OperatorState) -> dict[str, Any]:
    return {
        "operator_id": op.operator_id,
        "parallelism": op.parallelism,
        "max_parallelism": op.max_parallelism,
        "subtasks": [
            {"index": index, "state": _subtask_to_json(state)}
            for index, state in sorted(op.subtask_states.items())
        ],
        "finished_subtasks": sorted(op.finished_subtasks),
        **({"uid": op.uid} if op.uid else {}),
    }


def _operator_from_json(doc: dict[str, Any]) -> OperatorState:
    return OperatorState(
        operator_id=OperatorId(doc["operator_id"]),
        parallelism=int(doc["parallelism"]),
        max_parallelism=int(doc["max_parallelism"]),
        subtask_states={
            int(sub["index"]): _subtask_from_json(sub["state"]) for sub in doc["subtasks"]
        },
        # Absent in metadata written before finished tasks were recorded: none finished.
        finished_subtasks=frozenset(int(i) for i in doc.get("finished_subtasks", ())),
        uid=str(doc.get("uid", "")),
    )


def _meta_to_json(meta: tuple[StateMetaInfo, ...]) -> list[dict[str, str]]:
    return [{"name": m.name, "kind": m.kind, "serializer": m.serializer} for m in meta]


def _meta_from_json(doc: list[dict[str, Any]]) -> tuple[StateMetaInfo, ...]:
    return tuple(StateMetaInfo(str(m["name"]), str(m["kind"]), str(m["serializer"])) for m in doc)


def _files_to_json(files: tuple[SharedFile, ...]) -> list[dict[str, Any]]:
    return [{"name": f.name, "handle": _handle_to_json(f.handle)} for f in files]


def _files_from_json(doc: list[dict[str, Any]]) -> tuple[SharedFile, ...]:
    return tuple(SharedFile(str(f["name"]), _handle_from_json(f["handle"])) for f in doc)


def _keyed_to_json(h: KeyedStateHandle) -> dict[str, Any]:
    doc: dict[str, Any]
    if isinstance(h, IncrementalKeyGroupsStateHandle):
        doc = {
            "type": "incremental",
            "key_groups": [h.key_groups.start, h.key_groups.end],
            "backend_id": h.backend_id,
            "checkpoint_id": h.checkpoint_id,
            "shared": _files_to_json(h.shared),
            "private": _files_to_json(h.private),
            "state_meta": _meta_to_json(h.state_meta),
            "incremental_size": h.incremental_size,
        }
    else:
        doc = {
            "key_groups": [h.key_groups.start, h.key_groups.end],
            "handle": _handle_to_json(h.handle),
            "offsets": list(h.offsets),
            "state_meta": _meta_to_json(h.state_meta),
        }
    if h.key_placement:
        doc["key_placement"] = h.key_placement
    return doc


def _keyed_from_json(h: dict[str, Any]) -> KeyedStateHandle:
    key_groups = KeyGroupRange(int(h["key_groups"][0]), int(h["key_groups"][1]))
    if h.get("type") == "incremental":
        return IncrementalKeyGroupsStateHandle(
            key_groups=key_groups,
            backend_id=str(h["backend_id"]),
            checkpoint_id=int(h["checkpoint_id"]),
            shared=_files_from_json(h["shared"]),
            private=_files_from_json(h["private"]),
            state_meta=_meta_from_json(h["state_meta"]),
            incremental_size=int(h["incremental_size"]),
            key_placement=str(h.get("key_placement", "")),
        )
    return KeyGroupsStateHandle(
        key_groups,
        _handle_from_json(h["handle"]),
        _ints(h["offsets"]),
        # Absent in metadata written before state kinds were recorded.
        _meta_from_json(h.get("state_meta", [])),
        # Absent in metadata written before key placements were recorded.
        str(h.get("key_placement", "")),
    )


def _subtask_to_json(state: OperatorSubtaskState) -> dict[str, Any]:
    return {
        "keyed": [_keyed_to_json(h) for h in state.managed_keyed_state],
        "operator": [
            {
                "handle": _handle_to_json(h.handle),
                "partitions": [
                    {"name": p.name, "mode": p.mode.value, "offsets": list(p.offsets)}
                    for p in h.partitions
                ],
            }
            for h in state.managed_operator_state
        ],
        "input_channels": [
            {
                "gate": h.gate_index,
                "channel": h.channel_index,
                "handle": _handle_to_json(h.handle),
                "offsets": list(h.offsets),
            }
            for h in state.input_channel_state
        ],
        "result_subpartitions": [
            {
                "partition": h.partition_index,
                "subpartition": h.subpartition_index,
                "handle": _handle_to_json(h.handle),
                "offsets": list(h.offsets),
            }
            for h in state.result_subpartition_state
        ],
        "source_reader": [_handle_to_json(h) for h in state.source_reader_state],
        **(
            {"source_splits": [_handle_to_json(h) for h in state.source_split_state]}
            if state.source_split_state
            else {}
        ),
        **({"source_splits_rescaled": True} if state.source_splits_rescaled else {}),
    }


def _subtask_from_json(doc: dict[str, Any]) -> OperatorSubtaskState:
    return OperatorSubtaskState(
        managed_keyed_state=tuple(_keyed_from_json(h) for h in doc["keyed"]),
        managed_operator_state=tuple(
            OperatorStateHandle(
                _handle_from_json(h["handle"]),
                tuple(
                    OperatorStatePartition(
                        str(p["name"]),
                        OperatorStateDistributionMode(p["mode"]),
                        _ints(p["offsets"]),
                    )
                    for p in h["partitions"]
                ),
            )
            for h in doc["operator"]
        ),
        input_channel_state=tuple(
            InputChannelStateHandle(
                int(h["gate"]),
                int(h["channel"]),
                _handle_from_json(h["handle"]),
                _ints(h["offsets"]),
            )
            for h in doc["input_channels"]
        ),
        result_subpartition_state=tuple(
            ResultSubpartitionStateHandle(
                int(h["partition"]),
                int(h["subpartition"]),
                _handle_from_json(h["handle"]),
                _ints(h["offsets"]),
            )
            for h in doc["result_subpartitions"]
        ),
        source_reader_state=tuple(_handle_from_json(h) for h in doc["source_reader"]),
        # Absent in metadata written before readers kept their splits.
        source_split_state=tuple(_handle_from_json(h) for h in doc.get("source_splits", ())),
        source_splits_rescaled=bool(doc.get("source_splits_rescaled", False)),
    )


def _handle_to_json(handle: StreamStateHandle) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "size": handle.size,
        "checksum": handle.checksum,
        "compressed": handle.compressed,
    }
    if handle.inline is not None:
        doc["inline"] = base64.b64encode(handle.inline).decode("ascii")
    else:
        doc["path"] = handle.path
    return doc


def _handle_from_json(doc: dict[str, Any]) -> StreamStateHandle:
    inline = doc.get("inline")
    return StreamStateHandle(
        path=None if inline is not None else str(doc["path"]),
        size=int(doc["size"]),
        checksum=int(doc["checksum"]),
        compressed=bool(doc["compressed"]),
        inline=base64.b64decode(inline, validate=True) if inline is not None else None,
    )


def _ints(values: list[Any]) -> tuple[int, ...]:
    return tuple(int(v) for v in values)
