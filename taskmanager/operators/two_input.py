"""Two-input operators: co_map (map1/map2), co_flat_map (flat_map1/flat_map2) and
co_process (process_element1/process_element2 of a (Keyed)CoProcessFunction).

Records of input 0 go through ``process``, those of input 1 through ``process2``, as
they come. When an input is keyed, its own key selector sets the current key.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from taskmanager.operators.base import Collect, OperatorSetup, Output, StreamOperator, Timestamps
from taskmanager.operators.contexts import KeyedProcessContext, ProcessContext, TimerService
from taskmanager.operators.functions import (
    close_function,
    key_selector,
    open_function,
    required_method,
)
from taskmanager.operators.one_input import TimerEmitter, _expand_with_context, expand
from taskmanager.operators.timers import InternalTimerService
from taskmanager.state.backend import KeyedStateBackend
from weir.core.time_domain import TimeDomain


def _selectors(setup: OperatorSetup) -> list[Callable[[Any], Any] | None]:
    raw = list(setup.payload.get("key_selectors") or ())
    raw += [None] * (2 - len(raw))
    return [key_selector(s) if s is not None else None for s in raw[:2]]


def _map_input(
    f: Callable[[Any], Any],
    key: Callable[[Any], Any] | None,
    backend: KeyedStateBackend | None,
    output: Collect,
) -> Collect:
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


def _flat_map_input(
    f: Callable[[Any], Any],
    key: Callable[[Any], Any] | None,
    backend: KeyedStateBackend | None,
    output: Collect,
) -> Collect:
    call = f
    if key is not None and backend is not None:

        def call(x: Any) -> Any:
            backend.current_key = key(x)
            return f(x)

    def process(batch: list[Any], timestamps: Timestamps) -> None:
        if timestamps is None:
            out = [y for x in batch for y in call(x)]
            if out:
                output(out, None)
            return
        out, out_ts = expand(call, batch, timestamps)
        if out:
            output(out, out_ts)

    return process


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
        return _map_input(f, key, self.backend, output)


class CoFlatMapOperator(_CoOperator):
    methods = ("flat_map1", "flat_map2")

    def _wrap(
        self, f: Callable[[Any], Any], key: Callable[[Any], Any] | None, output: Collect
    ) -> Collect:
        return _flat_map_input(f, key, self.backend, output)


class CoProcessOperator(_CoOperator):
    """``process_element1/2(value, ctx)`` may yield, return an iterable or return None, as
    PyFlink's process functions do; ``ctx.get_current_key()`` and timers work when both
    inputs are keyed (KeyedCoProcessFunction)."""

    methods = ("process_element1", "process_element2")
    routes_tagged_results = True
    timers: InternalTimerService | None = None
    _timer_ctx: KeyedProcessContext | None = None

    def open(self, output: Output) -> None:
        self._collect = output.routing_tagged_results()
        self._fired = TimerEmitter()
        self._on_timer = getattr(self.function, "on_timer", None)
        backend = self.backend
        if backend is not None and all(k is not None for k in self.keys):
            self.timers = InternalTimerService(backend, self, self.setup.processing_timers,
                                               self.setup.clock_ms)
        self._timer_service = TimerService(self.setup.clock_ms, timers=self.timers, owner=self)
        super().open(output)
        self._timer_ctx = KeyedProcessContext(self._timer_service, output)

    def _wrap(
        self, f: Callable[..., Any], key: Callable[[Any], Any] | None, output: Collect
    ) -> Collect:
        backend = self.backend
        timers = self._timer_service
        if key is None or backend is None:
            plain = ProcessContext(timers, self.output)

            def call_plain(x: Any) -> Any:
                return f(x, plain)

            def process(batch: list[Any], timestamps: Timestamps) -> None:
                if timestamps is None:
                    out: list[Any] = []
                    extend = out.extend
                    for x in batch:
                        r = f(x, plain)
                        if r is not None:
                            extend(r)
                    if out:
                        output(out, None)
                    return
                out, out_ts = _expand_with_context(call_plain, batch, timestamps, plain)
                if out:
                    output(out, out_ts)

            return process

        ctx = KeyedProcessContext(timers, self.output)

        def call(x: Any) -> Any:
            backend.current_key = ctx.current_key = key(x)
            return f(x, ctx)

        def process_keyed(batch: list[Any], timestamps: Timestamps) -> None:
            if timestamps is None:
                out: list[Any] = []
                extend = out.extend
                for x in batch:
                    r = call(x)
                    if r is not None:
                        extend(r)
                if out:
                    output(out, None)
                return
            out, out_ts = _expand_with_context(call, batch, timestamps, ctx)
            if out:
                output(out, out_ts)

        return process_keyed

    def _fire(self, timestamp: int, key: Any, domain: TimeDomain) -> None:
        on_timer = self._on_timer
        ctx = self._timer_ctx
        if on_timer is None or ctx is None:
            return
        ctx.current_key = key
        ctx.current_timestamp = timestamp
        ctx._time_domain = domain
        self._fired.add(on_timer(timestamp, ctx),
                        timestamp if domain is TimeDomain.EVENT_TIME else None)

    def on_event_time(self, timestamp: int, key: Any, namespace: Any) -> None:
        self._fire(timestamp, key, TimeDomain.EVENT_TIME)

    def on_processing_time(self, timestamp: int, key: Any, namespace: Any) -> None:
        self._fire(timestamp, key, TimeDomain.PROCESSING_TIME)
        self._fired.emit(self._collect)

    def advance_watermark(self, watermark: int) -> None:
        self.current_watermark = watermark
        if self.timers is not None:
            self.timers.advance_watermark(watermark)
            self._fired.emit(self._collect)
        self.output.emit_watermark(watermark)
