"""Keyed state whose keys were placed in key groups by another rule than the job's: which
key groups of a handle a subtask reads, and each key read put in the group it belongs to.

Every keyed state handle records the key type its keys were placed by
(``KeyGroupsStateHandle.key_placement``, the ``PyFlinkKeyHasher.key_type`` of its
backend). State written before that was recorded records nothing; it was placed by
``legacy_key_placement`` of the key type, with the key ``None`` hashed as a field of
hashCode 0 rather than a null field. So, restoring a handle:

- recorded as the job places its keys: the key groups the subtask owns, as written;
- recorded as another key type: refused (``StateMigrationError``), as Flink refuses a key
  serializer it cannot migrate from: the keys would be looked for where they are not;
- recording nothing (legacy): a TUPLE or ROW key type's keys all moved, so the subtask
  reads every group of every legacy handle of the operator (the JobMaster gives it them
  all, ``weir.jobmanager.checkpoint.state_assignment``); other key types' keys stayed,
  but for ``None``, whose old group the subtask that owns its new one reads as well. Each
  key read is then made what the key selector returns now (a Row of a ROW key type gets
  the type's names), placed by the job's rule and kept if the subtask owns it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from weir.core.checkpoint import KeyedStateHandle
from weir.core.errors import StateMigrationError
from weir.core.key_groups import PyFlinkKeyHasher, legacy_key_placement, murmur_hash
from weir.taskmanager.state.backend import KeyedStateSnapshot

__all__ = ["check_key_placement", "groups_to_read", "is_legacy", "regroup"]

# What ``PyFlinkKeyHasher.key_group`` murmur-hashed for the key None before it took the key
# as a null field (Row.of(null).hashCode() is 31, not 62).
_LEGACY_NULL_KEY_CODE = 62


def is_legacy(handle: KeyedStateHandle) -> bool:
    """The handle records no key placement: it was written before they were recorded."""
    return not handle.key_placement


def check_key_placement(handle: KeyedStateHandle, key_type: str, operator: str) -> None:
    """Raise StateMigrationError when ``handle`` records another placement than
    ``key_type`` (a normalised key type name)."""
    recorded = handle.key_placement
    if not recorded or recorded == key_type:
        return
    msg = (
        f"{operator}: its keyed state was written with keys of type {recorded!r}, and the "
        f"job now keys it by {key_type!r}; keys of one type are placed in other key groups "
        "than the other's, so this state cannot be restored. Key the stream as before "
        f"(key_by(..., key_type=...) giving {recorded!r}), or give the operator a new uid "
        "and restore with --allowNonRestoredState to start it without its state"
    )
    raise StateMigrationError(msg)


def groups_to_read(
    handle: KeyedStateHandle, hasher: PyFlinkKeyHasher, owned: range, max_parallelism: int
) -> list[int]:
    """The key groups of ``handle`` a subtask owning ``owned`` reads."""
    written = range(handle.key_groups.start, handle.key_groups.end)
    if not is_legacy(handle):
        return [g for g in written if g in owned]
    if legacy_key_placement(hasher.key_type) != hasher.key_type:
        return list(written)  # every key may have moved
    groups = [g for g in written if g in owned]
    old_null = murmur_hash(_LEGACY_NULL_KEY_CODE) % max_parallelism
    new_null = hasher.key_group(None, max_parallelism)
    if new_null in owned and old_null in written and old_null not in owned:
        groups.append(old_null)
    return groups


def regroup(
    snapshot: KeyedStateSnapshot,
    hasher: PyFlinkKeyHasher,
    owned: range,
    conform_key: Callable[[Any], Any] | None = None,
) -> KeyedStateSnapshot:
    """``snapshot`` with each key in the group ``hasher`` places it in, keeping only the
    groups of ``owned``; ``conform_key`` makes an old key what the operator's key selector
    returns now (``weir.core.key_selectors.ConformedKeySelector``: Rows of a ROW key type
    named)."""
    m = snapshot.max_parallelism
    states: dict[str, dict[int, dict[Any, Any]]] = {}
    for name, by_group in snapshot.states.items():
        regrouped: dict[int, dict[Any, Any]] = {}
        for entries in by_group.values():
            for old_key, value in entries.items():
                key = old_key if conform_key is None else conform_key(old_key)
                group = hasher.key_group(key, m)
                if group in owned:
                    regrouped.setdefault(group, {})[key] = value
        states[name] = regrouped
    return KeyedStateSnapshot(m, states, snapshot.meta)
