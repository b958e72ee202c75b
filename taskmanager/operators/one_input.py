"""One-input operators: map, filter, flat_map, process, keyed_process and reduce.

Each binds a closure over the bound user method at open, so a batch costs one list
comprehension (or one loop) and no per-record dispatch. When the payload carries a
key selector, the operator sets the state backend's current key before calling the
user function for each record, so ``RuntimeContext.get_state`` works, as in PyFlink.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from taskmanager.operators.base import OperatorSetup, Output, StreamOperator, discard
from taskmanager.operators.contexts import KeyedProcessContext, ProcessContext, TimerService
from taskmanager.operators.functions import (
    close_function,
    key_selector,
    open_function,
    required_method,
    user_method,
)


def _input_key_selector(setup: OperatorSetup, index: int) -> Callable[[Any], Any] | None:
    selectors = setup.payload.get("key_selectors") or ()
    if index < len(selectors) and selectors[index] is not None:
        return key_selector(selectors[index])
    return None


class _UserFunctionOperator(StreamOperator):
    def __init__(self, setup: OperatorSetup) -> None:
        super().__init__(setup)
        self.function = setup.payload["function"]
        self.key = _input_key_selector(setup, 0)
        self.backend = setup.keyed_state_backend

    def open(self, output: Output) -> None:
        open_function(self.function, self.setup.runtime_context)
        self.process = self._bind(output)

    def _bind(self, output: Output) -> Output:
        raise NotImplementedError

    def close(self) -> None:
        close_function(self.function)


class MapOperator(_UserFunctionOperator):
    def _bind(self, output: Output) -> Output:
        f = user_method(self.function, "map", self.name)
        key, backend = self.key, self.backend
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


class FilterOperator(_UserFunctionOperator):
    """Keeps the records for which the function returns a truthy value (as PyFlink's
    ``if self._filter_func(value): yield value``)."""

    def _bind(self, output: Output) -> Output:
        f = user_method(self.function, "filter", self.name)
        key, backend = self.key, self.backend
        if key is None or backend is None:

            def process(batch: list[Any]) -> None:
                out = [x for x in batch if f(x)]
                if out:
                    output(out)

            return process

        def process_keyed(batch: list[Any]) -> None:
            out = []
            for x in batch:
                backend.current_key = key(x)
                if f(x):
                    out.append(x)
            if out:
                output(out)

        return process_keyed


class FlatMapOperator(_UserFunctionOperator):
    """Emits every element of the iterable (or generator) the function returns, as
    PyFlink's ``yield from self._flat_map_func(value)``."""

    def _bind(self, output: Output) -> Output:
        f = user_method(self.function, "flat_map", self.name)
        key, backend = self.key, self.backend
        if key is None or backend is None:

            def process(batch: list[Any]) -> None:
                out = [y for x in batch for y in f(x)]
                if out:
                    output(out)

            return process

        def process_keyed(batch: list[Any]) -> None:
            out: list[Any] = []
            extend = out.extend
            for x in batch:
                backend.current_key = key(x)
                extend(f(x))
            if out:
                output(out)

        return process_keyed


class ProcessOperator(_UserFunctionOperator):
    """``process_element(value, ctx)`` may yield, return an iterable, or return None
    (nothing emitted), as PyFlink's process operations accept."""

    def _bind(self, output: Output) -> Output:
        pe = required_method(self.function, "process_element", self.name)
        ctx = ProcessContext(TimerService(self.setup.clock_ms, keyed=False))

        def process(batch: list[Any]) -> None:
            out: list[Any] = []
            extend = out.extend
            for x in batch:
                r = pe(x, ctx)
                if r is not None:
                    extend(r)
            if out:
                output(out)

        return process

class KeyedProcessOperator(_UserFunctionOperator):
    def _bind(self, output: Output) -> Output:
        pe = required_method(self.function, "process_element", self.name)
        key, backend = self.key, self.backend
        if key is None or backend is None:
            msg = f"operator {self.name!r}: keyed_process needs a key selector for its input"
            raise ValueError(msg)
        ctx = KeyedProcessContext(TimerService(self.setup.clock_ms, keyed=True))
        self.context = ctx

        def process(batch: list[Any]) -> None:
            out: list[Any] = []
            extend = out.extend
            for x in batch:
                k = key(x)
                backend.current_key = k
                ctx.current_key = k
                r = pe(x, ctx)
                if r is not None:
                    extend(r)
            if out:
                output(out)

        return process


class ReduceOperator(_UserFunctionOperator):
    """Running reduce per key: emits the new accumulated value for every record, the
    first record of a key as is (PyFlink's KeyedStream.reduce). In BATCH execution mode
    it emits only the final value of each key, when the input ends, as Flink does."""

    STATE_NAME = "_weir_reduce"
    _final: dict[Any, Any] | None = None
    _output: Output = discard

    def _bind(self, output: Output) -> Output:
        f = user_method(self.function, "reduce", self.name)
        key, backend = self.key, self.backend
        if key is None or backend is None:
            msg = f"operator {self.name!r}: reduce runs on a KeyedStream; call key_by() first"
            raise ValueError(msg)
        if self.setup.batch_mode:
            # Flink's batch execution keeps one accumulator per key and no state backend.
            final: dict[Any, Any] = {}
            self._final, self._output = final, output
            missing = object()

            def accumulate(batch: list[Any]) -> None:
                for x in batch:
                    k = key(x)
                    acc = final.get(k, missing)
                    final[k] = x if acc is missing else f(acc, x)

            return accumulate
        state = backend.get_value_state(self.STATE_NAME)
        value, update = state.value, state.update

        def process(batch: list[Any]) -> None:
            out: list[Any] = []
            append = out.append
            for x in batch:
                backend.current_key = key(x)
                acc = value()
                acc = x if acc is None else f(acc, x)
                update(acc)
                append(acc)
            output(out)

        return process

    def finish(self) -> None:
        if self._final:
            self._output(list(self._final.values()))
