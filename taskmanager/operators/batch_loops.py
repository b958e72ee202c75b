"""The per-batch loops that call a user function on each record of a batch.

One-input and two-input operators bind these at ``open``, once per input: ``bind_map``
for map, map1/map2; ``bind_flat_map`` for flat_map, flat_map1/flat_map2;
``bind_process`` and ``bind_keyed_process`` for (Keyed)ProcessFunction and
process_element1/2. Each returns a ``process(batch, timestamps)`` closure that holds
the user method, key selector, state backend and output as local cells: a batch costs
one call and one loop (or comprehension), a record no dispatch beyond the user call
and its key selector. Keyed loops set the backend's current key (and the context's,
for process functions) inline rather than through a wrapper, for the same reason.

Timestamps follow Flink's TimestampedCollector: a map's results keep their inputs'
timestamps, every result of a flat_map or process function gets the timestamp of the
record it came from. Without timestamps (``timestamps is None``) a loop never builds a
timestamp list.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from weir.taskmanager.operators.base import Collect, Timestamps
from weir.taskmanager.operators.contexts import KeyedProcessContext, ProcessContext
from weir.taskmanager.state.backend import KeyedStateBackend

KeySelector = Callable[[Any], Any]


class _NoContext:
    __slots__ = ("current_timestamp",)


def emit_expanded(
    f: Callable[[Any], Any],
    batch: list[Any],
    timestamps: list[int | None],
    output: Collect,
    ctx: Any = None,
) -> None:
    """Emits every element of ``f(x)`` (None: nothing) for each ``x``, each with the
    timestamp of its ``x``; ``ctx.current_timestamp`` is that timestamp while ``f`` runs."""
    if ctx is None:
        ctx = _NoContext()
    out: list[Any] = []
    out_ts: list[int | None] = []
    extend = out.extend
    for x, t in zip(batch, timestamps, strict=True):
        ctx.current_timestamp = t
        n = len(out)
        r = f(x)
        if r is not None:
            extend(r)
            if len(out) > n:
                out_ts.extend([t] * (len(out) - n))
    ctx.current_timestamp = None
    if out:
        output(out, out_ts)


def bind_map(
    f: Callable[[Any], Any],
    key: KeySelector | None,
    backend: KeyedStateBackend | None,
    output: Collect,
) -> Collect:
    """One result per record, with the record's timestamp."""
    if key is None or backend is None:

        def process(batch: list[Any], timestamps: Timestamps) -> None:
            output([f(x) for x in batch], timestamps)

        return process

    def process_keyed(batch: list[Any], timestamps: Timestamps) -> None:
        out: list[Any] = []
        append = out.append
        for x in batch:
            backend.current_key = key(x)
            append(f(x))
        output(out, timestamps)

    return process_keyed


def bind_flat_map(
    f: Callable[[Any], Any],
    key: KeySelector | None,
    backend: KeyedStateBackend | None,
    output: Collect,
) -> Collect:
    """Every element of the iterable (or generator) ``f`` returns, as PyFlink's
    ``yield from self._flat_map_func(value)``."""
    if key is None or backend is None:

        def process(batch: list[Any], timestamps: Timestamps) -> None:
            if timestamps is not None:
                emit_expanded(f, batch, timestamps, output)
                return
            out = [y for x in batch for y in f(x)]
            if out:
                output(out, None)

        return process

    # Only ``emit_expanded`` takes the record through a wrapper; the loop without
    # timestamps sets the key inline.
    def keyed(x: Any) -> Any:
        backend.current_key = key(x)
        return f(x)

    def process_keyed(batch: list[Any], timestamps: Timestamps) -> None:
        if timestamps is not None:
            emit_expanded(keyed, batch, timestamps, output)
            return
        out: list[Any] = []
        extend = out.extend
        for x in batch:
            backend.current_key = key(x)
            extend(f(x))
        if out:
            output(out, None)

    return process_keyed


def bind_process(
    pe: Callable[[Any, Any], Any],
    ctx: ProcessContext,
    output: Collect,
) -> Collect:
    """``pe(value, ctx)`` may yield, return an iterable, or return None (nothing
    emitted), as PyFlink's process functions may."""

    def call(x: Any) -> Any:
        return pe(x, ctx)

    def process(batch: list[Any], timestamps: Timestamps) -> None:
        if timestamps is not None:
            emit_expanded(call, batch, timestamps, output, ctx)
            return
        out: list[Any] = []
        extend = out.extend
        for x in batch:
            r = pe(x, ctx)
            if r is not None:
                extend(r)
        if out:
            output(out, None)

    return process


def bind_keyed_process(
    pe: Callable[[Any, Any], Any],
    key: KeySelector,
    backend: KeyedStateBackend,
    ctx: KeyedProcessContext,
    output: Collect,
) -> Collect:
    """``bind_process`` with the record's key set, before ``pe`` runs, on the state
    backend and on ``ctx`` (``ctx.get_current_key()``)."""

    def call(x: Any) -> Any:
        backend.current_key = ctx.current_key = key(x)
        return pe(x, ctx)

    def process_keyed(batch: list[Any], timestamps: Timestamps) -> None:
        if timestamps is not None:
            emit_expanded(call, batch, timestamps, output, ctx)
            return
        out: list[Any] = []
        extend = out.extend
        for x in batch:
            backend.current_key = ctx.current_key = key(x)
            r = pe(x, ctx)
            if r is not None:
                extend(r)
        if out:
            output(out, None)

    return process_keyed
