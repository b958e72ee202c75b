"""Reading which field a small user function returns, so that a columnar batch can give
that field's column instead of calling the function once per record.

``field_of(f)`` recognises exactly the functions that return one field of their
argument: ``lambda r: r[2]`` (a constant position or key) and ``lambda r: r.price`` (an
attribute), whether plain functions, lambdas or a ``get_key``/``extract_timestamp``
method whose record is its first argument after ``self``; for anything else it answers
None and the caller calls the function per record as always. It reads the function's
bytecode, instruction by instruction: a function that does anything more (a default
value, arithmetic, a closure, a global) is never taken for a field.
"""

from __future__ import annotations

import dis
import types
from typing import Any

__all__ = ["field_of"]

# Opcodes that do nothing a function's result depends on (3.11's RESUME, 3.12's caches).
_NOISE = frozenset({"RESUME", "NOP", "CACHE", "EXTENDED_ARG"})


def field_of(function: Any) -> int | str | None:
    """The field ``function`` returns of its (record) argument, or None."""
    selector = getattr(function, "weir_key_selector", None)
    if selector is not None:  # a key selector the runtime wrapped: the user's function
        return field_of(selector)
    code_owner = function
    record_arg = 0
    if isinstance(function, types.MethodType):
        code_owner = function.__func__
        record_arg = 1  # self comes first
    else:
        for name in ("get_key", "extract_timestamp"):
            bound = getattr(function, name, None)
            if isinstance(bound, types.MethodType) and not isinstance(function, types.FunctionType):
                return field_of(bound)
    code = getattr(code_owner, "__code__", None)
    if code is None or code.co_freevars or getattr(code_owner, "__defaults__", None):
        return None
    if code.co_argcount <= record_arg:
        return None
    record_name = code.co_varnames[record_arg]
    steps = [i for i in dis.get_instructions(code) if i.opname not in _NOISE]
    if len(steps) < 3 or steps[0].opname != "LOAD_FAST" or steps[0].argval != record_name:
        return None
    if steps[-1].opname != "RETURN_VALUE":
        return None
    middle = steps[1:-1]
    if (
        len(middle) == 2
        and middle[0].opname == "LOAD_CONST"
        and middle[1].opname in ("BINARY_SUBSCR", "BINARY_OP")
        and (middle[1].opname == "BINARY_SUBSCR" or middle[1].argrepr == "[]")
        and isinstance(middle[0].argval, int | str)
        and not isinstance(middle[0].argval, bool)
    ):
        return middle[0].argval  # type: ignore[no-any-return]
    if len(middle) == 1 and middle[0].opname == "LOAD_ATTR" and isinstance(middle[0].argval, str):
        return middle[0].argval  # type: ignore[no-any-return]
    return None
