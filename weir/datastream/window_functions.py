"""Window functions (``pyflink.datastream.functions``' window part): what a window
operator calls when a window fires, and the adapters that give every kind of window
function one internal signature. ``weir.datastream.functions`` re-exports them, where
PyFlink programs import them from."""

from __future__ import annotations

import abc
from collections.abc import Iterable
from typing import Any, Generic, TypeVar

from weir.datastream.function_base import Function, RuntimeContext
from weir.datastream.state import (
    AggregatingState,
    AggregatingStateDescriptor,
    ListState,
    ListStateDescriptor,
    MapState,
    MapStateDescriptor,
    ReducingState,
    ReducingStateDescriptor,
    ValueState,
    ValueStateDescriptor,
)

# PyFlink's window functions are generic (``ProcessWindowFunction[tuple, tuple, str,
# TimeWindow]``, ``ProcessWindowFunction.Context[TimeWindow]``); programs subscript them.
IN = TypeVar("IN")
OUT = TypeVar("OUT")
KEY = TypeVar("KEY")
W = TypeVar("W")
W2 = TypeVar("W2")


class KeyedStateStore(abc.ABC):
    """Where a window function's ``window_state()`` and ``global_state()`` come from."""

    @abc.abstractmethod
    def get_state(self, state_descriptor: ValueStateDescriptor) -> ValueState: ...

    @abc.abstractmethod
    def get_list_state(self, state_descriptor: ListStateDescriptor) -> ListState: ...

    @abc.abstractmethod
    def get_map_state(self, state_descriptor: MapStateDescriptor) -> MapState: ...

    @abc.abstractmethod
    def get_reducing_state(self, state_descriptor: ReducingStateDescriptor) -> ReducingState: ...

    @abc.abstractmethod
    def get_aggregating_state(
        self, state_descriptor: AggregatingStateDescriptor
    ) -> AggregatingState: ...


class WindowFunction(Function, Generic[IN, OUT, KEY, W]):
    """Evaluates a keyed window: ``apply`` returns or yields the outputs::

    >>> class CountPerWindow(WindowFunction):
    ...     def apply(self, key, window, inputs):
    ...         yield key, window.start, len(list(inputs))
    """

    @abc.abstractmethod
    def apply(self, key: Any, window: Any, inputs: Iterable[Any]) -> Iterable[Any]:
        """Evaluates the window of ``key`` holding ``inputs``."""


class AllWindowFunction(Function, Generic[IN, OUT, W]):
    """Evaluates a window of a non-keyed stream (``window_all``)."""

    @abc.abstractmethod
    def apply(self, window: Any, inputs: Iterable[Any]) -> Iterable[Any]:
        """Evaluates ``window`` holding ``inputs``."""


class ProcessWindowFunction(Function, Generic[IN, OUT, KEY, W]):
    """Evaluates a keyed window with a context: the window, the clocks and state::

    >>> class Report(ProcessWindowFunction):
    ...     def process(self, key, context, elements):
    ...         yield key, context.window().end, len(list(elements))
    """

    class Context(abc.ABC, Generic[W2]):
        """The window being evaluated and what the function may use."""

        @abc.abstractmethod
        def window(self) -> Any: ...

        @abc.abstractmethod
        def current_processing_time(self) -> int: ...

        @abc.abstractmethod
        def current_watermark(self) -> int: ...

        @abc.abstractmethod
        def window_state(self) -> KeyedStateStore:
            """State of this key and window; clean it up in ``clear``."""

        @abc.abstractmethod
        def global_state(self) -> KeyedStateStore:
            """State of this key, shared by all its windows."""

    @abc.abstractmethod
    def process(
        self, key: Any, context: ProcessWindowFunction.Context, elements: Iterable[Any]
    ) -> Iterable[Any]:
        """Evaluates the window of ``key`` holding ``elements``."""

    def clear(self, context: ProcessWindowFunction.Context) -> None:
        """Called when the window is dropped (the watermark passed its end plus the allowed
        lateness): delete the per-window state kept in ``context.window_state()``."""


class ProcessAllWindowFunction(Function, Generic[IN, OUT, W]):
    """Evaluates a window of a non-keyed stream with a context."""

    class Context(abc.ABC, Generic[W2]):
        @abc.abstractmethod
        def window(self) -> Any: ...

        @abc.abstractmethod
        def window_state(self) -> KeyedStateStore: ...

        @abc.abstractmethod
        def global_state(self) -> KeyedStateStore: ...

    @abc.abstractmethod
    def process(
        self, context: ProcessAllWindowFunction.Context, elements: Iterable[Any]
    ) -> Iterable[Any]:
        """Evaluates the window holding ``elements``."""

    def clear(self, context: ProcessAllWindowFunction.Context) -> None:
        """Called when the window is dropped; delete its per-window state."""


class PassThroughWindowFunction(WindowFunction):
    def apply(self, key: Any, window: Any, inputs: Iterable[Any]) -> Iterable[Any]:
        yield from inputs


class PassThroughAllWindowFunction(AllWindowFunction):
    def apply(self, window: Any, inputs: Iterable[Any]) -> Iterable[Any]:
        yield from inputs


class InternalWindowFunction(Function, Generic[IN, OUT, KEY, W]):
    """What the window operator calls when a window fires: one interface over the four
    kinds of user window function, fed either the single reduced/aggregated value or the
    buffered elements (``process(key, window, context, input_data)``), and ``clear`` when
    the window is dropped. ``context`` offers ``current_processing_time()``,
    ``current_watermark()``, ``window_state()`` and ``global_state()``."""

    def __init__(self, wrapped_function: Any) -> None:
        self._wrapped_function = wrapped_function

    def open(self, runtime_context: RuntimeContext) -> None:
        opener = getattr(self._wrapped_function, "open", None)
        if callable(opener):
            opener(runtime_context)

    def close(self) -> None:
        closer = getattr(self._wrapped_function, "close", None)
        if callable(closer):
            closer()

    @abc.abstractmethod
    def process(self, key: Any, window: Any, context: Any, input_data: Any) -> Iterable[Any]: ...

    def clear(self, window: Any, context: Any) -> None:
        """The window is dropped."""


class InternalProcessWindowContext(ProcessWindowFunction.Context, ProcessAllWindowFunction.Context):
    """The context a (Process)WindowFunction sees, over the operator's context."""

    __slots__ = ("_underlying", "_window")

    def __init__(self) -> None:
        self._underlying: Any = None
        self._window: Any = None

    def window(self) -> Any:
        return self._window

    def current_processing_time(self) -> int:
        return self._underlying.current_processing_time()  # type: ignore[no-any-return]

    def current_watermark(self) -> int:
        return self._underlying.current_watermark()  # type: ignore[no-any-return]

    def window_state(self) -> KeyedStateStore:
        return self._underlying.window_state()  # type: ignore[no-any-return]

    def global_state(self) -> KeyedStateStore:
        return self._underlying.global_state()  # type: ignore[no-any-return]


class InternalSingleValueWindowFunction(InternalWindowFunction):
    def process(self, key: Any, window: Any, context: Any, input_data: Any) -> Iterable[Any]:
        return self._wrapped_function.apply(key, window, [input_data])  # type: ignore[no-any-return]


class InternalSingleValueAllWindowFunction(InternalWindowFunction):
    def process(self, key: Any, window: Any, context: Any, input_data: Any) -> Iterable[Any]:
        return self._wrapped_function.apply(window, [input_data])  # type: ignore[no-any-return]


class InternalIterableWindowFunction(InternalWindowFunction):
    def process(self, key: Any, window: Any, context: Any, input_data: Any) -> Iterable[Any]:
        return self._wrapped_function.apply(key, window, input_data)  # type: ignore[no-any-return]


class InternalIterableAllWindowFunction(InternalWindowFunction):
    def process(self, key: Any, window: Any, context: Any, input_data: Any) -> Iterable[Any]:
        return self._wrapped_function.apply(window, input_data)  # type: ignore[no-any-return]


class _InternalProcessFunction(InternalWindowFunction):
    def __init__(self, wrapped_function: Any) -> None:
        super().__init__(wrapped_function)
        self._context = InternalProcessWindowContext()

    def _bind(self, window: Any, context: Any) -> InternalProcessWindowContext:
        ctx = self._context
        ctx._window = window
        ctx._underlying = context
        return ctx

    def clear(self, window: Any, context: Any) -> None:
        self._wrapped_function.clear(self._bind(window, context))


class InternalSingleValueProcessWindowFunction(_InternalProcessFunction):
    def process(self, key: Any, window: Any, context: Any, input_data: Any) -> Iterable[Any]:
        return self._wrapped_function.process(  # type: ignore[no-any-return]
            key, self._bind(window, context), [input_data]
        )


class InternalSingleValueProcessAllWindowFunction(_InternalProcessFunction):
    def process(self, key: Any, window: Any, context: Any, input_data: Any) -> Iterable[Any]:
        return self._wrapped_function.process(  # type: ignore[no-any-return]
            self._bind(window, context), [input_data]
        )


class InternalIterableProcessWindowFunction(_InternalProcessFunction):
    def process(self, key: Any, window: Any, context: Any, input_data: Any) -> Iterable[Any]:
        return self._wrapped_function.process(  # type: ignore[no-any-return]
            key, self._bind(window, context), input_data
        )


class InternalIterableProcessAllWindowFunction(_InternalProcessFunction):
    def process(self, key: Any, window: Any, context: Any, input_data: Any) -> Iterable[Any]:
        return self._wrapped_function.process(  # type: ignore[no-any-return]
            self._bind(window, context), input_data
        )
