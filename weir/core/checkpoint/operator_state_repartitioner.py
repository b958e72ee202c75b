"""Operator state redistribution on restore: which subtask gets which operator state
(Flink's ``RoundRobinOperatorStateRepartitioner``).

Operator state is not keyed, so nothing says where it belongs; each named state says
how it is handed out again by its ``OperatorStateDistributionMode``:

- ``SPLIT_DISTRIBUTE`` (``get_list_state``): the elements of every old subtask, in
  subtask order, are cut into ``new_parallelism`` contiguous runs of nearly equal size
  (the first ``total % new_parallelism`` runs one longer). The next named state starts
  with the first subtask that got a short run, so the long runs of several states do
  not pile up on the same subtasks. Every element goes to exactly one subtask; a
  state without elements goes to none (it starts empty wherever it is asked for).
- ``UNION`` (``get_union_list_state``): every subtask gets every element, also at the
  same parallelism (that is what a union list state is for).
- ``BROADCAST`` (broadcast state): every subtask holds the same copy; new subtask ``i``
  reads the copy of old subtask ``i % old_parallelism``, so the reads are spread.

A state is addressed by element offsets into its subtask's stream
(``OperatorStatePartition.offsets``); redistribution only regroups offsets and never
reads a byte. Handles that point into the same stream are merged into one
``OperatorStateHandle`` per new subtask. At the same parallelism without union state,
every subtask gets back exactly what it wrote.
"""

from __future__ import annotations

from collections.abc import Sequence

from weir.core.checkpoint.state_handles import (
    OperatorStateDistributionMode,
    OperatorStateHandle,
    OperatorStatePartition,
    StreamStateHandle,
)

__all__ = ["repartition_operator_state"]

_SPLIT = OperatorStateDistributionMode.SPLIT_DISTRIBUTE
_UNION = OperatorStateDistributionMode.UNION
_BROADCAST = OperatorStateDistributionMode.BROADCAST

_Located = tuple[StreamStateHandle, OperatorStatePartition]
_Merged = dict[StreamStateHandle, dict[str, OperatorStatePartition]]


def repartition_operator_state(
    previous: Sequence[Sequence[OperatorStateHandle]], new_parallelism: int
) -> list[list[OperatorStateHandle]]:
    """The operator state handles of each of ``new_parallelism`` subtasks, given those
    of each old subtask (``previous[i]`` is what old subtask ``i`` wrote; its length is
    the old parallelism)."""
    if new_parallelism < 1:
        msg = f"the new parallelism must be at least 1, got {new_parallelism}"
        raise ValueError(msg)
    by_mode = _group_by_mode(previous)
    # A subtask reads its streams in the old subtasks' order, so list elements keep theirs.
    order = {h.handle: i for i, h in enumerate(h for handles in previous for h in handles)}
    if new_parallelism == len(previous):
        if not by_mode[_UNION]:
            return [list(handles) for handles in previous]
        merged: list[_Merged] = [
            {h.handle: {p.name: p for p in h.partitions} for h in handles} for handles in previous
        ]
        _union(by_mode[_UNION], merged)
        return [_handles(m, order) for m in merged]
    merged = [{} for _ in range(new_parallelism)]
    _split(by_mode[_SPLIT], merged)
    _union(by_mode[_UNION], merged)
    _broadcast(by_mode[_BROADCAST], merged)
    return [_handles(m, order) for m in merged]


def _group_by_mode(
    previous: Sequence[Sequence[OperatorStateHandle]],
) -> dict[OperatorStateDistributionMode, dict[str, list[_Located]]]:
    """mode -> state name -> where each old subtask keeps it, in old subtask order."""
    by_mode: dict[OperatorStateDistributionMode, dict[str, list[_Located]]] = {
        mode: {} for mode in OperatorStateDistributionMode
    }
    for handles in previous:
        for handle in handles:
            for partition in handle.partitions:
                by_mode[partition.mode].setdefault(partition.name, []).append(
                    (handle.handle, partition)
                )
    # Names in a fixed order, so the same checkpoint is always redistributed the same way.
    return {mode: dict(sorted(names.items())) for mode, names in by_mode.items()}


def _put(merged: _Merged, stream: StreamStateHandle, partition: OperatorStatePartition) -> None:
    merged.setdefault(stream, {})[partition.name] = partition


def _split(states: dict[str, list[_Located]], merged: list[_Merged]) -> None:
    parallelism = len(merged)
    start = 0
    for name, located in states.items():
        elements = [(stream, offset) for stream, part in located for offset in part.offsets]
        base, remainder = divmod(len(elements), parallelism)
        next_start = start
        position = 0
        for i in range(parallelism):
            subtask = (start + i) % parallelism
            count = base + 1 if i < remainder else base
            if i == remainder:
                next_start = subtask  # the first short run starts the next state
            run = elements[position : position + count]
            position += count
            # One partition per stream the run touches, its offsets in stream order.
            offsets: dict[StreamStateHandle, list[int]] = {}
            for stream, offset in run:
                offsets.setdefault(stream, []).append(offset)
            for stream, offs in offsets.items():
                _put(merged[subtask], stream, OperatorStatePartition(name, _SPLIT, tuple(offs)))
        start = next_start


def _union(states: dict[str, list[_Located]], merged: list[_Merged]) -> None:
    for target in merged:
        for located in states.values():
            for stream, partition in located:
                _put(target, stream, partition)


def _broadcast(states: dict[str, list[_Located]], merged: list[_Merged]) -> None:
    for i, target in enumerate(merged):
        for located in states.values():
            stream, partition = located[i % len(located)]
            _put(target, stream, partition)


def _handles(merged: _Merged, order: dict[StreamStateHandle, int]) -> list[OperatorStateHandle]:
    return [
        OperatorStateHandle(stream, tuple(sorted(parts.values(), key=lambda p: p.name)))
        for stream, parts in sorted(merged.items(), key=lambda item: order[item[0]])
    ]
