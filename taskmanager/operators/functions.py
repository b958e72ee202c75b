"""Normalising user functions: Function instances or plain callables, opened and closed.

PyFlink accepts both ``MapFunction()`` instances and plain callables for most
operators; we fetch the bound method (or the callable) once at open, so the
per-record path is a single call. ``open``/``close`` are called only when the object
has them (a plain callable has neither), as PyFlink's operations do.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from weir.core.canonical_keys import state_key
from weir.core.errors import WeirError
from weir.core.field_access import field_of


class FunctionTypeError(WeirError, TypeError):
    """A payload's function has neither the expected method nor is callable."""


def user_method(function: Any, method: str, operator_name: str) -> Callable[..., Any]:
    """``function.<method>`` when it has one, else ``function`` itself if callable."""
    bound = getattr(function, method, None)
    if bound is not None and callable(bound):
        return bound  # type: ignore[no-any-return]
    if callable(function):
        return function  # type: ignore[no-any-return]
    msg = (
        f"operator {operator_name!r}: expected an object with a {method}() method or a "
        f"callable; got {type(function).__name__!r}"
    )
    raise FunctionTypeError(msg)


def required_method(function: Any, method: str, operator_name: str) -> Callable[..., Any]:
    """``function.<method>``; these operators accept no plain callable (CoMapFunction...)."""
    bound = getattr(function, method, None)
    if bound is None or not callable(bound):
        msg = (
            f"operator {operator_name!r}: the function {type(function).__name__!r} has no "
            f"{method}() method"
        )
        raise FunctionTypeError(msg)
    return bound  # type: ignore[no-any-return]


def key_selector(selector: Any) -> Callable[[Any], Any]:
    """A KeySelector's ``get_key`` or the callable itself, giving each key as keyed state
    holds it (``state_key``: every NaN in it the one NaN object, so that the dicts keyed
    by key, the hashmap backend's and the operators' own, find it again).

    A key that is a string or an int, the usual ones, costs one type check more. A
    selector that reads a position of its record (``lambda r: r[0]``) is replaced by one
    that reads it and checks, in one call; any other is called from a wrapper. Either
    carries the user's function as ``weir_key_selector``, which ``field_of`` and error
    messages read."""
    get_key = user_method(selector, "get_key", "key_by")
    field = field_of(get_key)
    key = _reading_position(field) if isinstance(field, int) else _calling(get_key)
    key.weir_key_selector = get_key  # type: ignore[attr-defined]
    return key


def _reading_position(field: int) -> Callable[[Any], Any]:
    def key(x: Any, _field: int = field, _state_key: Any = state_key) -> Any:
        k = x[_field]
        t = type(k)
        if t is str or t is int:
            return k
        return _state_key(k)

    return key


def _calling(get_key: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def key(x: Any, _get_key: Any = get_key, _state_key: Any = state_key) -> Any:
        k = _get_key(x)
        t = type(k)
        if t is str or t is int:
            return k
        return _state_key(k)

    return key


def open_function(function: Any, runtime_context: Any) -> None:
    opener = getattr(function, "open", None)
    if opener is not None and callable(opener):
        opener(runtime_context)


def close_function(function: Any) -> None:
    closer = getattr(function, "close", None)
    if closer is not None and callable(closer):
        closer()
