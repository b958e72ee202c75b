"""Naming the key selector whose key the state backend could not use.

The hashmap state backend keeps each state in a dict by key, so a key selector that
returns a list fails at the first state access, deep inside the state code, with
Python's bare ``TypeError: unhashable type: 'list'``. ``guard_keys`` wraps the per-batch
entry of a keyed operator (``process`` or ``process2``): the ``try`` costs nothing while
no error is raised, and only when a batch fails does it run the key selector over the
batch again to find the record whose key cannot be hashed. It then raises
``UnhashableKeyError`` naming the key selector, the operator, the key and what to
return instead, chained to the original error.

Only the error is translated; nothing about the records that went before changes. The
rocksdb backend keys its state by bytes and accepts such keys, so the guard never fires
there.
"""

from __future__ import annotations

import reprlib
from collections.abc import Callable
from typing import Any

from weir.core.errors import UnhashableKeyError
from weir.taskmanager.operators.base import Collect, Timestamps

_REPR = reprlib.Repr()
_REPR.maxstring = 60
_REPR.maxother = 60


def describe_function(function: Any) -> str:
    """A user function as its author knows it: ``by_user (job.py:12)``, ``<lambda>
    (job.py:30)``, ``MyKeySelector.get_key``."""
    function = getattr(function, "weir_key_selector", function)  # see key_selector
    target = getattr(function, "__func__", function)  # a bound method's function
    name = getattr(target, "__qualname__", None) or type(function).__qualname__
    code = getattr(target, "__code__", None)
    if code is None:
        return name
    filename = code.co_filename.rsplit("/", 1)[-1]
    return f"{name} ({filename}:{code.co_firstlineno})"


def _unhashable(key: Any) -> TypeError | None:
    try:
        hash(key)
    except TypeError as exc:
        return exc
    return None


def unhashable_key_error(
    batch: list[Any], key_selector: Callable[[Any], Any], operator_name: str
) -> UnhashableKeyError | None:
    """The error for the first record of ``batch`` whose key cannot be hashed; None
    when every key can (the failure was something else)."""
    for record in batch:
        key = key_selector(record)
        cause = _unhashable(key)
        if cause is not None:
            msg = (
                f"the key selector {describe_function(key_selector)} of operator "
                f"{operator_name!r} returned a key that cannot be hashed: {_REPR.repr(key)} "
                f"(a {type(key).__name__}; {cause}). Keyed state on the hashmap state "
                "backend is kept in dicts by key, so a key must be hashable: return a tuple "
                "instead of a list, a frozenset instead of a set, a tuple of the items "
                "instead of a dict"
            )
            return UnhashableKeyError(msg)
    return None


def guard_keys(process: Collect, key_selector: Callable[[Any], Any], operator_name: str) -> Collect:
    """``process`` (a keyed operator's entry for one input), raising
    ``UnhashableKeyError`` instead of the state code's ``TypeError`` when a key of the
    failed batch cannot be hashed."""

    def guarded(batch: list[Any], timestamps: Timestamps) -> None:
        try:
            process(batch, timestamps)
        except UnhashableKeyError:
            raise  # a keyed operator further down the chain named its own selector
        except TypeError as exc:
            if "unhashable" in str(exc):
                error = unhashable_key_error(batch, key_selector, operator_name)
                if error is not None:
                    raise error from exc
            raise

    return guarded
