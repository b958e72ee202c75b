"""Columnar blocks in the ``rocksdb`` backend: a runtime table whose values are kept one
block per key group and namespace instead of one entry per key (the window operator's
built-in aggregates: one block per key group and window).

The blocks of table ``T`` live in the column family ``T/blocks`` (``StateKind.BLOCKS``),
each under the key::

    key group (u16) | namespace (i64, its sign bit flipped: big-endian bytes sort as the
                                 numbers do)

so, as in every other column family of the backend, all state of a key-group range is
one contiguous range of keys: incremental checkpoints carry the blocks as they are,
and a restore at another parallelism copies the key groups it owns. A block's value is
``window_block_codec``'s bytes.

In the canonical form (full checkpoints, savepoints, what another backend restores)
there are no blocks: ``canonical_block_entries`` reads them key by key, and the
snapshot puts each key's accumulators into table ``T`` as ``{namespace: accumulator}``,
exactly what the per-key path stores, so the canonical form does not tell the two
apart.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

from weir.taskmanager.state.rocksdb_layout import KEY_GROUP_PREFIXES
from weir.taskmanager.state.window_block_codec import accumulators, decode_block

BLOCKS_SUFFIX = "/blocks"
_NAMESPACE = struct.Struct(">Q")
_SIGN = 1 << 63
_U16 = struct.Struct(">H")


def blocks_table(table: str) -> str:
    """The column family holding table ``table``'s values in blocks."""
    return table + BLOCKS_SUFFIX


def blocks_target(name: str) -> str:
    """The table the blocks of column family ``name`` stand for."""
    return name.removesuffix(BLOCKS_SUFFIX)


def block_key(key_group: int, namespace: int) -> bytes:
    """The key of the block of ``key_group`` in integer ``namespace`` (a window start)."""
    return KEY_GROUP_PREFIXES[key_group] + _NAMESPACE.pack((namespace + _SIGN) & (_SIGN * 2 - 1))


def parse_block_key(key: bytes) -> tuple[int, int]:
    """``(key group, namespace)`` of a block key."""
    group = _U16.unpack_from(key)[0]
    namespace = _NAMESPACE.unpack_from(key, 2)[0] - _SIGN
    return group, namespace


def canonical_block_entries(cf: Any, prefix: bytes = b"") -> Iterator[tuple[int, Any, int, Any]]:
    """``(key group, key, namespace, accumulator)`` of every key in every block of ``cf``
    whose key starts with ``prefix`` (a key group's, or none)."""
    it = cf.iter()
    if prefix:
        it.seek(prefix)
    else:
        it.seek_to_first()
    while it.valid():
        raw_key = it.key()
        if prefix and not raw_key.startswith(prefix):
            break
        group, namespace = parse_block_key(raw_key)
        for key, acc in accumulators(decode_block(it.value(), writable=False)).items():
            yield group, key, namespace, acc
        it.next()


def fold_blocks(
    by_group: dict[int, dict[Any, Any]], blocks: Iterator[tuple[int, Any, int, Any]]
) -> None:
    """Put what ``blocks`` (``canonical_block_entries``) hold into ``by_group``, the
    canonical form of the table they stand for (``{key group: {key: {namespace:
    value}}}``, changed in place)."""
    for group, key, namespace, acc in blocks:
        entries = by_group.get(group)
        if entries is None:
            entries = by_group[group] = {}
        values = entries.get(key)
        if values is None:
            values = entries[key] = {}
        values[namespace] = acc
