"""Two-input operators: co_map (map1/map2), co_flat_map (flat_map1/flat_map2) and
co_process (process_element1/process_element2 of a (Keyed)CoProcessFunction).

Records of input 0 go through ``process``, those of input 1 through ``process2``, as
they come. When an input is keyed, its own key selector sets the current key.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from taskmanager.operators.base import OperatorSetup, Output, StreamOperator
from taskmanager.operators.contexts import KeyedProcessContext, ProcessContext, TimerService
from taskmanager.operators.functions import (
    close_function,
    key_selector,
    open_function,
    required_method,
)
from taskmanager.state.backend import KeyedStateBackend


def _selectors(setup: OperatorSetup) -> list[Callable[[Any], Any] | None]:
    raw = list(setup.payload.get("key_selectors") or ())
    raw += [None] * (2 - len(raw))
    return [key_selector(s) if s is not None else None for s in raw[:2]]


def _map_input(
    f: Callable[[Any], Any],
    key: Callable[[Any], Any] | None,
    backend: KeyedStateBackend | None,
    output: Output,
) -> Output:
    if key is None or backend is None:

        def process(batch: list[Any]) -> None:
            output([f(x) for x in batch])

        return process

    def process_keyed(batch: list[Any]) -> None:
        out: list[Any] = []
        append = out.append
        for x in batch:
            backend.current_key = key(x)
            append(f(x))
        output(out)

    return process_keyed


def _flat_map_input(
    f: Callable[[Any], Any],
    key: Callable[[Any], Any] | None,
    backend: KeyedStateBackend | None,
    output: Output,
) -> Output:
    def process(batch: list[Any]) -> None:
        out: list[Any] = []
        extend = out.extend
        for x in batch:
            if key is not None and backend is not None:
                backend.current_key = key(x)
            extend(f(x))
        if out:
            output(out)

    return process


class _CoOperator(StreamOperator):
    methods: tuple[str, str] = ("", "")

    def __init__(self, setup: OperatorSetup) -> None:
        super().__init__(setup)
        self.function = setup.payload["function"]
        self.keys = _selectors(setup)
        self.backend = setup.keyed_state_backend

    def open(self, output: Output) -> None:
        open_function(self.function, self.setup.runtime_context)
        f1 = required_method(self.function, self.methods[0], self.name)
        f2 = required_method(self.function, self.methods[1], self.name)
        self.process = self._wrap(f1, self.keys[0], output)
        self.process2 = self._wrap(f2, self.keys[1], output)

    def _wrap(
        self, f: Callable[..., Any], key: Callable[[Any], Any] | None, output: Output
    ) -> Output:
        raise NotImplementedError

    def close(self) -> None:
        close_function(self.function)


class CoMapOperator(_CoOperator):
    methods = ("map1", "map2")

    def _wrap(
        self, f: Callable[[Any], Any], key: Callable[[Any], Any] | None, output: Output
    ) -> Output:
        return _map_input(f, key, self.backend, output)


class CoFlatMapOperator(_CoOperator):
    methods = ("flat_map1", "flat_map2")

    def _wrap(
        self, f: Callable[[Any], Any], key: Callable[[Any], Any] | None, output: Output
    ) -> Output:
        return _flat_map_input(f, key, self.backend, output)


class CoProcessOperator(_CoOperator):
    """``process_element1/2(value, ctx)`` may yield, return an iterable or return None, as
    PyFlink's process functions do; ``ctx.get_current_key()`` works when both inputs are
    keyed (KeyedCoProcessFunction)."""

    methods = ("process_element1", "process_element2")

    def _wrap(
        self, f: Callable[..., Any], key: Callable[[Any], Any] | None, output: Output
    ) -> Output:
        backend = self.backend
        timers = TimerService(self.setup.clock_ms, keyed=key is not None)
        if key is None or backend is None:
            plain = ProcessContext(timers)

            def process(batch: list[Any]) -> None:
                out: list[Any] = []
                extend = out.extend
                for x in batch:
                    r = f(x, plain)
                    if r is not None:
                        extend(r)
                if out:
                    output(out)

            return process

        ctx = KeyedProcessContext(timers)

        def process_keyed(batch: list[Any]) -> None:
            out: list[Any] = []
            extend = out.extend
            for x in batch:
                backend.current_key = ctx.current_key = key(x)
                r = f(x, ctx)
                if r is not None:
                    extend(r)
            if out:
                output(out)

        return process_keyed
