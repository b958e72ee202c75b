"""One-input operators: map, filter, flat_map, process, keyed_process and reduce.

Each binds a closure over the bound user method at open, so a batch costs one list
comprehension (or one loop) and no per-record dispatch; the map, flat_map and process
loops are ``batch_loops``', shared with the two-input operators. When the payload
carries a key selector, the operator sets the state backend's current key before
calling the user function for each record, so ``RuntimeContext.get_state`` works, as
in PyFlink.

Records keep their timestamps: a map's results carry the timestamps of its inputs, a
filter keeps those of the records it keeps, a flat_map and a process function give
every result the timestamp of the record it came from (Flink's TimestampedCollector).
Without timestamps (``timestamps is None``) each operator takes a path that never
builds a timestamp list.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any

from weir.core.columnar import ColumnBatch, as_records
from weir.core.field_access import field_of
from weir.taskmanager.operators.base import (
    Collect,
    OperatorSetup,
    Output,
    StreamOperator,
    Timestamps,
    discard,
    timestamp_list,
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
    user_method,
)
from weir.taskmanager.operators.keyed_accumulate import accumulate_columns
from weir.taskmanager.operators.process_timers import (
    FiresProcessFunctionTimers,
    ProcessFunctionTimers,
)


def _input_key_selector(setup: OperatorSetup, index: int) -> Callable[[Any], Any] | None:
    selectors = setup.payload.get("key_selectors") or ()
    if index < len(selectors) and selectors[index] is not None:
        return key_selector(selectors[index])
    return None


class PickledKey:
    """An unhashable key (a list, a dict) stood for by its pickled bytes, which is how
    PyFlink tells keys apart."""

    __slots__ = ("_pickled", "value")

    def __init__(self, value: Any) -> None:
        self.value = value
        self._pickled = pickle.dumps(value, protocol=5)

    def __hash__(self) -> int:
        return hash(self._pickled)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PickledKey) and other._pickled == self._pickled


class _UserFunctionOperator(StreamOperator):
    def __init__(self, setup: OperatorSetup) -> None:
        super().__init__(setup)
        self.function = setup.payload["function"]
        self.key = _input_key_selector(setup, 0)
        self.backend = setup.keyed_state_backend

    routes_tagged_results = False
    """Process functions: ``yield output_tag, value`` goes to a side output."""

    def open(self, output: Output) -> None:
        super().open(output)
        open_function(self.function, self.setup.runtime_context)
        collect = output.routing_tagged_results() if self.routes_tagged_results else output.collect
        self.process = self._bind(collect)

    def _bind(self, output: Collect) -> Collect:
        raise NotImplementedError

    def close(self) -> None:
        close_function(self.function)


class MapOperator(_UserFunctionOperator):
    def _bind(self, output: Collect) -> Collect:
        f = user_method(self.function, "map", self.name)
        return bind_map(f, self.key, self.backend, output)


class FilterOperator(_UserFunctionOperator):
    """Keeps the records for which the function returns a truthy value (as PyFlink's
    ``if self._filter_func(value): yield value``)."""

    def _bind(self, output: Collect) -> Collect:
        f = user_method(self.function, "filter", self.name)
        key, backend = self.key, self.backend
        if key is None or backend is None:

            def process(batch: list[Any], timestamps: Timestamps) -> None:
                if timestamps is None:
                    out = [x for x in batch if f(x)]
                    if out:
                        output(out, None)
                    return
                _emit_kept(batch, timestamps, [f(x) for x in batch], output)

            return process

        def process_keyed(batch: list[Any], timestamps: Timestamps) -> None:
            kept = []
            for x in batch:
                backend.current_key = key(x)
                kept.append(f(x))
            _emit_kept(batch, timestamps, kept, output)

        return process_keyed


def _emit_kept(batch: list[Any], timestamps: Timestamps, kept: list[Any], output: Collect) -> None:
    out = [x for x, k in zip(batch, kept, strict=True) if k]
    if out:
        output(
            out,
            None if timestamps is None else [t for t, k in zip(timestamps, kept, strict=True) if k],
        )


class FlatMapOperator(_UserFunctionOperator):
    """Emits every element of the iterable (or generator) the function returns, as
    PyFlink's ``yield from self._flat_map_func(value)``."""

    def _bind(self, output: Collect) -> Collect:
        f = user_method(self.function, "flat_map", self.name)
        return bind_flat_map(f, self.key, self.backend, output)


class ProcessOperator(_UserFunctionOperator):
    """``process_element(value, ctx)`` may yield, return an iterable, or return None
    (nothing emitted), as PyFlink's process operations accept."""

    routes_tagged_results = True

    def _bind(self, output: Collect) -> Collect:
        pe = required_method(self.function, "process_element", self.name)
        ctx = ProcessContext(TimerService(self.setup.clock_ms, owner=self), self.output)
        return bind_process(pe, ctx, output)


class KeyedProcessOperator(FiresProcessFunctionTimers, _UserFunctionOperator):
    """A KeyedProcessFunction with its timers (``ctx.timer_service()``), which are kept
    per key in the state backend and fire through ``on_timer``."""

    routes_tagged_results = True

    def _bind(self, output: Collect) -> Collect:
        pe = required_method(self.function, "process_element", self.name)
        key, backend = self.key, self.backend
        if key is None or backend is None:
            msg = f"operator {self.name!r}: keyed_process needs a key selector for its input"
            raise ValueError(msg)
        self.user_timers = ProcessFunctionTimers(self, self.function, backend, output)
        ctx = KeyedProcessContext(self.user_timers.timer_service, self.output)
        self.context = ctx
        return bind_keyed_process(pe, key, backend, ctx, output)


class ReduceOperator(_UserFunctionOperator):
    """Running reduce per key: emits the new accumulated value for every record, the
    first record of a key as is (PyFlink's KeyedStream.reduce). In BATCH execution mode
    it emits only the final value of each key, when the input ends, as Flink does."""

    STATE_NAME = "_weir_reduce"
    _final: dict[Any, Any] | None = None
    _final_output: Collect = discard

    def _bind(self, output: Collect) -> Collect:
        f = user_method(self.function, "reduce", self.name)
        key, backend = self.key, self.backend
        if key is None or backend is None:
            msg = f"operator {self.name!r}: reduce runs on a KeyedStream; call key_by() first"
            raise ValueError(msg)
        if self.setup.batch_mode:
            # Flink's batch execution keeps one accumulator per key; the function's own
            # state (get_state in open) is still the current key's.
            final: dict[Any, Any] = {}
            self._final, self._final_output = final, output
            missing = object()

            def accumulate(batch: list[Any], timestamps: Timestamps) -> None:
                for x in batch:
                    k = key(x)
                    try:
                        acc = final.get(k, missing)
                    except TypeError:  # an unhashable key (a list): by its pickled bytes
                        k = PickledKey(k)
                        acc = final.get(k, missing)
                    if acc is missing:
                        final[k] = x
                    else:
                        backend.current_key = k
                        final[k] = f(acc, x)

            return accumulate
        state = backend.get_value_state(self.STATE_NAME)
        value, update = state.value, state.update

        def process(batch: list[Any], timestamps: Timestamps) -> None:
            out: list[Any] = []
            append = out.append
            for x in batch:
                backend.current_key = key(x)
                acc = value()
                acc = x if acc is None else f(acc, x)
                update(acc)
                append(acc)
            output(out, timestamps)

        builtin = getattr(self.function, "accumulate", None)
        key_field = field_of(key)
        if not isinstance(builtin, tuple) or key_field is None:
            return process
        # KeyedStream.sum/min/max/min_by/max_by keyed by one field: a batch of columns
        # is aggregated in one pass (keyed_accumulate), a list record by record.
        self.columnar = True
        kind, field = builtin

        def process_columns(batch: list[Any], timestamps: Timestamps) -> None:
            if type(batch) is ColumnBatch:
                results = accumulate_columns(
                    kind,
                    field,
                    batch,
                    key_field=key_field,
                    backend=backend,
                    value=value,
                    update=update,
                )
                if results is not None:
                    output(results, timestamps)  # type: ignore[arg-type]
                    return
            process(as_records(batch), timestamp_list(timestamps))

        return process_columns

    def end_key(self) -> None:
        """BATCH, sorted input: the key's final value goes out when its records end, and
        nothing of the key is kept."""
        self.finish()
        backend = self.setup.keyed_state_backend
        if backend is not None:
            backend.clear_key(backend.current_key)

    def finish(self) -> None:
        if self._final:
            self._final_output(list(self._final.values()), None)
            self._final.clear()
