"""Normalising user functions: Function instances or plain callables, opened and closed.

PyFlink accepts both ``MapFunction()`` instances and plain callables for most
operators; we fetch the bound method (or the callable) once at open, so the
per-record path is a single call. ``open``/``close`` are called only when the object
has them (a plain callable has neither), as PyFlink's operations do.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from weir.core.errors import WeirError


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
    """A KeySelector's ``get_key`` or the callable itself."""
    return user_method(selector, "get_key", "key_by")


def open_function(function: Any, runtime_context: Any) -> None:
    opener = getattr(function, "open", None)
    if opener is not None and callable(opener):
        opener(runtime_context)


def close_function(function: Any) -> None:
    closer = getattr(function, "close", None)
    if closer is not None and callable(closer):
        closer()
