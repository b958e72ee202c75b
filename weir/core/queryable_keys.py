"""How a queryable state's key crosses the network: ``marshal`` bytes of a basic value
(None, bool, int, float, str, bytes) or a tuple of them, checked on both sides.

Never pickle: the proxy and every TaskManager decode keys sent by any client, and
unpickling runs code. ``marshal`` only builds values, and ``decode_key`` refuses
anything but the types above (a code object, a set, a list)."""

from __future__ import annotations

import marshal
from typing import Any

_BASIC = (type(None), bool, int, float, str, bytes)


def _check(key: Any) -> bool:
    if isinstance(key, tuple):
        return all(_check(part) for part in key)
    return type(key) in _BASIC


def encode_key(key: Any) -> bytes:
    """``key`` as bytes; TypeError naming what to pass for a key of another type."""
    if not _check(key):
        msg = (
            f"a queryable state key must be None, bool, int, float, str, bytes or a tuple "
            f"of them; got {type(key).__name__} {key!r}. Key the stream by such a value "
            "(e.g. a str or a tuple of fields) to query its state"
        )
        raise TypeError(msg)
    return marshal.dumps(key)


def decode_key(data: bytes) -> Any:
    """The key of ``encode_key``; ValueError for bytes that are not one."""
    try:
        # marshal builds values and runs nothing; _check refuses what no key can be.
        key = marshal.loads(data)  # noqa: S302
    except (EOFError, ValueError, TypeError) as exc:
        msg = "the serialized key is not a marshal of a basic value"
        raise ValueError(msg) from exc
    if not _check(key):
        msg = f"a queryable state key must be a basic value or a tuple of them; got {type(key)}"
        raise ValueError(msg)
    return key
