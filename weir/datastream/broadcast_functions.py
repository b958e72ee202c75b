"""The functions of a BroadcastConnectedStream (mirrors ``pyflink.datastream.functions``):
``BroadcastProcessFunction`` after a non-keyed stream, ``KeyedBroadcastProcessFunction``
after a keyed one; and ``KeyedStateFunction`` for ``ctx.apply_to_keyed_state``.

``process_broadcast_element`` runs in every parallel instance for every element of the
broadcast stream and may read and write the broadcast state; ``process_element`` runs for
the elements of the other stream and reads the broadcast state only, so that every
instance keeps the same broadcast state. Both may ``yield`` results (or return an
iterable, or None), and ``yield output_tag, value`` for a side output, as the other
process functions.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterable
from typing import Any

from weir.datastream.function_base import Function
from weir.datastream.state import BroadcastState, MapStateDescriptor, ReadOnlyBroadcastState
from weir.datastream.timerservice import TimerService

__all__ = [
    "BaseBroadcastProcessFunction",
    "BroadcastProcessFunction",
    "KeyedBroadcastProcessFunction",
    "KeyedStateFunction",
]


class KeyedStateFunction(abc.ABC):
    """What ``apply_to_keyed_state`` calls for each key (Flink's ``KeyedStateFunction``,
    beyond PyFlink); a plain ``callable(key, state)`` works as well."""

    @abc.abstractmethod
    def process(self, key: Any, state: Any) -> None:
        """``state`` is bound to ``key`` during the call: read, update or clear it."""


class BaseBroadcastProcessFunction(Function):
    """What all broadcast process functions share: their contexts."""

    class BaseContext(abc.ABC):
        @abc.abstractmethod
        def timestamp(self) -> int:
            """The timestamp of the element (or firing timer); Long.MIN_VALUE when the
            element has none, as in PyFlink."""

        @abc.abstractmethod
        def current_processing_time(self) -> int:
            pass

        @abc.abstractmethod
        def current_watermark(self) -> int:
            pass

    class Context(BaseContext):
        """The broadcast side's context: read and write access to the broadcast state."""

        @abc.abstractmethod
        def get_broadcast_state(self, state_descriptor: MapStateDescriptor) -> BroadcastState:
            pass

    class ReadOnlyContext(BaseContext):
        """The non-broadcast side's context: read-only access to the broadcast state."""

        @abc.abstractmethod
        def get_broadcast_state(
            self, state_descriptor: MapStateDescriptor
        ) -> ReadOnlyBroadcastState:
            pass


class BroadcastProcessFunction(BaseBroadcastProcessFunction):
    """Applied to a non-keyed DataStream connected with a BroadcastStream::

    rules = MapStateDescriptor("rules", Types.STRING(), Types.INT())

    class ApplyRules(BroadcastProcessFunction):
        def process_element(self, value, ctx):
            limit = ctx.get_broadcast_state(rules).get(value[0])
            if limit is not None and value[1] > limit:
                yield value

        def process_broadcast_element(self, value, ctx):
            ctx.get_broadcast_state(rules).put(value[0], value[1])

    events.connect(rule_stream.broadcast(rules)).process(ApplyRules())
    """

    class Context(BaseBroadcastProcessFunction.Context, abc.ABC):
        pass

    class ReadOnlyContext(BaseBroadcastProcessFunction.ReadOnlyContext, abc.ABC):
        pass

    @abc.abstractmethod
    def process_element(
        self, value: Any, ctx: BroadcastProcessFunction.ReadOnlyContext
    ) -> Iterable[Any] | None:
        """Called for each element of the non-broadcast stream; the broadcast state is
        read-only here."""

    @abc.abstractmethod
    def process_broadcast_element(
        self, value: Any, ctx: BroadcastProcessFunction.Context
    ) -> Iterable[Any] | None:
        """Called for each element of the broadcast stream, in every parallel instance;
        it may update the broadcast state."""


class KeyedBroadcastProcessFunction(BaseBroadcastProcessFunction):
    """Applied to a KeyedStream connected with a BroadcastStream: ``process_element`` also
    has the keyed state of the element's key and timers (``on_timer``), and
    ``process_broadcast_element`` can visit the keyed state of every key with
    ``ctx.apply_to_keyed_state`` (as in Flink; PyFlink 2.3 lacks it)."""

    class Context(BaseBroadcastProcessFunction.Context, abc.ABC):
        @abc.abstractmethod
        def apply_to_keyed_state(
            self,
            state_descriptor: Any,
            function: KeyedStateFunction | Callable[[Any, Any], None],
        ) -> None:
            """Calls ``function.process(key, state)`` (or ``function(key, state)``) for
            every key of this parallel instance that has a value in the keyed state of
            ``state_descriptor``, with ``state`` bound to that key. The function may read,
            update or clear the state; what it emits goes nowhere (yield from
            ``process_broadcast_element`` instead)."""

    class ReadOnlyContext(BaseBroadcastProcessFunction.ReadOnlyContext, abc.ABC):
        @abc.abstractmethod
        def timer_service(self) -> TimerService:
            pass

        @abc.abstractmethod
        def get_current_key(self) -> Any:
            pass

    class OnTimerContext(ReadOnlyContext, abc.ABC):
        @abc.abstractmethod
        def time_domain(self) -> Any:
            """The TimeDomain of the firing timer."""

    @abc.abstractmethod
    def process_element(
        self, value: Any, ctx: KeyedBroadcastProcessFunction.ReadOnlyContext
    ) -> Iterable[Any] | None:
        """Called for each element of the keyed stream, with its key's keyed state."""

    @abc.abstractmethod
    def process_broadcast_element(
        self, value: Any, ctx: KeyedBroadcastProcessFunction.Context
    ) -> Iterable[Any] | None:
        """Called for each element of the broadcast stream, in every parallel instance."""

    def on_timer(
        self, timestamp: int, ctx: KeyedBroadcastProcessFunction.OnTimerContext
    ) -> Iterable[Any] | None:
        """Called when a timer set in ``process_element`` (or ``on_timer``) fires."""
        return None
