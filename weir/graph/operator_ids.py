"""Operator ids that are the same in every process and run (Flink's StreamGraphHasherV2 idea).

An operator with a ``uid`` gets ``md5(uid)``; one with ``set_uid_hash`` gets that hash;
any other gets a hash of its position in the topological order, the number of operators
chained to it and the ids of its inputs, so an unchanged program keeps its ids.
"""

from __future__ import annotations

import hashlib
import string

from weir.core.errors import JobGraphError
from weir.core.ids import OperatorId
from weir.graph.stream_graph import StreamGraph

__all__ = ["operator_ids", "uid_to_operator_id"]

_HEX = frozenset(string.hexdigits)


def uid_to_operator_id(uid: str) -> OperatorId:
    return OperatorId(hashlib.md5(uid.encode("utf-8"), usedforsecurity=False).hexdigest())


def _checked_uid_hash(uid_hash: str, name: str) -> OperatorId:
    if len(uid_hash) != 32 or not set(uid_hash) <= _HEX:
        msg = (
            f"operator {name!r}: set_uid_hash({uid_hash!r}) needs 32 hexadecimal characters "
            f"(the shape of an operator id as Flink logs it)"
        )
        raise JobGraphError(msg)
    return OperatorId(uid_hash.lower())


def operator_ids(graph: StreamGraph) -> dict[int, OperatorId]:
    """The operator id of every node of ``graph``, by node id."""
    ids: dict[int, OperatorId] = {}
    uids: dict[str, str] = {}
    for position, node in enumerate(graph.topological_order()):
        if node.uid is not None:
            if node.uid in uids:
                msg = (
                    f"duplicate uid {node.uid!r}: operators {uids[node.uid]!r} and "
                    f"{node.name!r} both use it; every uid must be unique in a job"
                )
                raise JobGraphError(msg)
            uids[node.uid] = node.name
        if node.uid_hash is not None:
            ids[node.id] = _checked_uid_hash(node.uid_hash, node.name)
        elif node.uid is not None:
            ids[node.id] = uid_to_operator_id(node.uid)
        else:
            chained = sum(1 for e in node.out_edges if graph.is_chainable(e))
            inputs = ",".join(ids[e.source_id] for e in node.in_edges)
            text = f"{position}:{chained}:{inputs}"
            ids[node.id] = OperatorId(
                hashlib.md5(text.encode("ascii"), usedforsecurity=False).hexdigest()
            )
    seen: dict[str, str] = {}
    for node in graph.nodes.values():
        oid = ids[node.id]
        if oid in seen:
            msg = (
                f"operators {seen[oid]!r} and {node.name!r} have the same id {oid}: "
                f"two set_uid_hash() calls (or a uid_hash and a uid) collide"
            )
            raise JobGraphError(msg)
        seen[oid] = node.name
    return ids
