"""Two-input operators: co_map (map1/map2), co_flat_map (flat_map1/flat_map2) and
co_process (process_element1/process_element2 of a (Keyed)CoProcessFunction).

Records of input 0 go through ``process``, those of input 1 through ``process2``, as
they come. When an input is keyed, its own key selector sets the current key. Each
input's loop is the one-input operators' (``batch_loops``), bound to its own method.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from weir.taskmanager.operators.base import (
    Collect,
    OperatorSetup,
    Output,
    StreamOperator,
)
from weir.taskmanager.operators.batch_loops import (
    bind_flat_map,
    bind_keyed_process,
    bind_map,
    bind_process,
)
from weir.taskmanager.operators.contexts import KeyedProcessContext, ProcessContext, TimerService
from weir.taskmanager.operators.functions import (
    close_function,
    key_selector,
    open_function,
    required_method,
)
from weir.taskmanager.operators.process_timers import (
    FiresProcessFunctionTimers,
    ProcessFunctionTimers,
)


def _selectors(setup: OperatorSetup) -> list[Callable[[Any], Any] | None]:
    raw = list(setup.payload.get("key_selectors") or ())
    raw += [None] * (2 - len(raw))
    return [key_selector(s) if s is not None else None for s in raw[:2]]


class _CoOperator(StreamOperator):
    methods: tuple[str, str] = ("", "")

    def __init__(self, setup: OperatorSetup) -> None:
        super().__init__(setup)
        self.function = setup.payload["function"]
        self.keys = _selectors(setup)
        self.backend = setup.keyed_state_backend

    routes_tagged_results = False

    def open(self, output: Output) -> None:
        super().open(output)
        open_function(self.function, self.setup.runtime_context)
        f1 = required_method(self.function, self.methods[0], self.name)
        f2 = required_method(self.function, self.methods[1], self.name)
        collect = output.routing_tagged_results() if self.routes_tagged_results else output.collect
        self.process = self._wrap(f1, self.keys[0], collect)
        self.process2 = self._wrap(f2, self.keys[1], collect)

    def _wrap(
        self, f: Callable[..., Any], key: Callable[[Any], Any] | None, output: Collect
    ) -> Collect:
        raise NotImplementedError

    def close(self) -> None:
        close_function(self.function)


class CoMapOperator(_CoOperator):
    methods = ("map1", "map2")

    def _wrap(
        self, f: Callable[[Any], Any], key: Callable[[Any], Any] | None, output: Collect
    ) -> Collect:
        return bind_map(f, key, self.backend, output)


class CoFlatMapOperator(_CoOperator):
    methods = ("flat_map1", "flat_map2")

    def _wrap(
        self, f: Callable[[Any], Any], key: Callable[[Any], Any] | None, output: Collect
    ) -> Collect:
        return bind_flat_map(f, key, self.backend, output)


class CoProcessOperator(FiresProcessFunctionTimers, _CoOperator):
    """``process_element1/2(value, ctx)`` may yield, return an iterable or return None, as
    PyFlink's process functions do; ``ctx.get_current_key()`` and timers work when both
    inputs are keyed (KeyedCoProcessFunction)."""

    methods = ("process_element1", "process_element2")
    routes_tagged_results = True

    def open(self, output: Output) -> None:
        self.output = output
        backend = self.backend
        if backend is not None and all(k is not None for k in self.keys):
            self.user_timers = ProcessFunctionTimers(
                self, self.function, backend, output.routing_tagged_results()
            )
            self._timer_service = self.user_timers.timer_service
        else:
            self._timer_service = TimerService(self.setup.clock_ms, owner=self)
        super().open(output)

    def _wrap(
        self, f: Callable[..., Any], key: Callable[[Any], Any] | None, output: Collect
    ) -> Collect:
        backend = self.backend
        timers = self._timer_service
        if key is None or backend is None:
            return bind_process(f, ProcessContext(timers, self.output), output)
        return bind_keyed_process(f, key, backend, KeyedProcessContext(timers, self.output), output)
