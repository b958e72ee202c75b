"""``ConnectedStreams``: two streams processed together by a co-function; and
``BroadcastConnectedStream``: a stream connected with a BroadcastStream."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from weir.common.typeinfo import RowTypeInfo, TypeInformation, Types
from weir.core.job_graph import OperatorKind
from weir.datastream.data_stream import BroadcastStream, DataStream, KeyedStream
from weir.datastream.functions import (
    BroadcastProcessFunction,
    CoFlatMapFunction,
    CoMapFunction,
    CoProcessFunction,
    KeyedBroadcastProcessFunction,
    KeyedCoProcessFunction,
    KeySelector,
)
from weir.datastream.state import MapStateDescriptor
from weir.graph.transformations import PhysicalTransformation

__all__ = ["BroadcastConnectedStream", "ConnectedStreams"]


class ConnectedStreams:
    """``ds1.connect(ds2)``: ``map``/``flat_map`` with a CoMapFunction/CoFlatMapFunction,
    ``map1``/``flat_map1`` for the first input and ``map2``/``flat_map2`` for the second."""

    def __init__(self, stream1: DataStream, stream2: DataStream) -> None:
        self.stream1 = stream1
        self.stream2 = stream2

    def key_by(
        self,
        key_selector1: Callable[[Any], Any] | KeySelector,
        key_selector2: Callable[[Any], Any] | KeySelector,
        key_type: TypeInformation | None = None,
    ) -> ConnectedStreams:
        ds1, ds2 = self.stream1, self.stream2
        if isinstance(ds1, KeyedStream):
            ds1 = ds1._origin_stream
        if isinstance(ds2, KeyedStream):
            ds2 = ds2._origin_stream
        return ConnectedStreams(
            ds1.key_by(key_selector1, key_type), ds2.key_by(key_selector2, key_type)
        )

    def _is_keyed_stream(self) -> bool:
        return isinstance(self.stream1, KeyedStream) and isinstance(self.stream2, KeyedStream)

    def _co_operator(
        self,
        kind: OperatorKind,
        name: str,
        func: Any,
        output_type: TypeInformation | list[TypeInformation] | None,
    ) -> DataStream:
        payload: dict[str, Any] = {"function": func}
        if self._is_keyed_stream():
            assert isinstance(self.stream1, KeyedStream) and isinstance(self.stream2, KeyedStream)
            payload["key_selectors"] = [self.stream1._key_selector, self.stream2._key_selector]
        if output_type is None:
            resolved: TypeInformation = Types.PICKLED_BYTE_ARRAY()
        elif isinstance(output_type, list):
            resolved = RowTypeInfo(output_type)
        else:
            resolved = output_type
        env = self.stream1._env
        t = PhysicalTransformation(
            id=env._next_id(),
            name=name,
            output_type=resolved,
            kind=kind,
            input_streams=[self.stream1._transformation, self.stream2._transformation],
            payload=payload,
        )
        env._add_operator(t)
        return DataStream(env, t)

    def map(self, func: CoMapFunction, output_type: TypeInformation | None = None) -> DataStream:
        if not isinstance(func, CoMapFunction):
            msg = "The input function must be a CoMapFunction!"
            raise TypeError(msg)
        return self._co_operator(OperatorKind.CO_MAP, "Co-Map", func, output_type)

    def flat_map(
        self, func: CoFlatMapFunction, output_type: TypeInformation | None = None
    ) -> DataStream:
        if not isinstance(func, CoFlatMapFunction):
            msg = "The input must be a CoFlatMapFunction!"
            raise TypeError(msg)
        return self._co_operator(OperatorKind.CO_FLAT_MAP, "Co-Flat Map", func, output_type)

    def process(
        self,
        func: CoProcessFunction | KeyedCoProcessFunction,
        output_type: TypeInformation | None = None,
    ) -> DataStream:
        """Applies a CoProcessFunction (or, on two keyed streams, a KeyedCoProcessFunction):
        ``process_element1`` for records of the first stream, ``process_element2`` for the
        second; each may yield results, return an iterable, or return None."""
        if self._is_keyed_stream():
            if not isinstance(func, KeyedCoProcessFunction):
                msg = (
                    "The input function of two connected keyed streams must be a "
                    "KeyedCoProcessFunction!"
                )
                raise TypeError(msg)
            name = "Keyed Co-Process"
        else:
            if not isinstance(func, CoProcessFunction):
                msg = "The input function of connected streams must be a CoProcessFunction!"
                raise TypeError(msg)
            name = "Co-Process"
        return self._co_operator(OperatorKind.CO_PROCESS, name, func, output_type)


class BroadcastConnectedStream:
    """A keyed or non-keyed stream connected with a BroadcastStream
    (``ds.connect(other.broadcast(descriptor, ...))``): the broadcast stream carries what
    every parallel instance must know (rules, thresholds, lookups) and keeps it in the
    broadcast state the descriptors declare; the other stream's elements are processed
    against it. ``process`` applies a BroadcastProcessFunction, or after a KeyedStream a
    KeyedBroadcastProcessFunction."""

    def __init__(
        self,
        non_broadcast_stream: DataStream,
        broadcast_stream: BroadcastStream,
        broadcast_state_descriptors: list[MapStateDescriptor],
    ) -> None:
        self.non_broadcast_stream = non_broadcast_stream
        self.broadcast_stream = broadcast_stream
        self.broadcast_state_descriptors = broadcast_state_descriptors

    def _is_keyed_stream(self) -> bool:
        return isinstance(self.non_broadcast_stream, KeyedStream)

    def process(
        self,
        func: BroadcastProcessFunction | KeyedBroadcastProcessFunction,
        output_type: TypeInformation | list[TypeInformation] | None = None,
    ) -> DataStream:
        """Applies ``func``: ``process_element`` to the non-broadcast stream's elements,
        ``process_broadcast_element`` to the broadcast stream's, in every parallel
        instance. Without ``output_type`` the results are pickled."""
        keyed = self._is_keyed_stream()
        if isinstance(func, BroadcastProcessFunction) and keyed:
            msg = "BroadcastProcessFunction should be applied to non-keyed DataStream"
            raise TypeError(msg)
        if isinstance(func, KeyedBroadcastProcessFunction) and not keyed:
            msg = "KeyedBroadcastProcessFunction should be applied to keyed DataStream"
            raise TypeError(msg)
        if not isinstance(func, BroadcastProcessFunction | KeyedBroadcastProcessFunction):
            msg = (
                "process() of a BroadcastConnectedStream takes a BroadcastProcessFunction "
                "(or, after key_by(), a KeyedBroadcastProcessFunction); got "
                f"{type(func).__name__!r}"
            )
            raise TypeError(msg)
        if output_type is None:
            resolved: TypeInformation = Types.PICKLED_BYTE_ARRAY()
        elif isinstance(output_type, list):
            resolved = RowTypeInfo(output_type)
        elif isinstance(output_type, TypeInformation):
            resolved = output_type
        else:
            msg = "output_type must be None, list or TypeInformation"
            raise TypeError(msg)
        payload: dict[str, Any] = {
            "function": func,
            "broadcast_state_descriptors": list(self.broadcast_state_descriptors),
        }
        if keyed:
            stream = self.non_broadcast_stream
            assert isinstance(stream, KeyedStream)
            payload["key_selectors"] = [stream._key_selector, None]
            kind, name = OperatorKind.KEYED_BROADCAST_PROCESS, "Keyed-Co-Process-Broadcast"
        else:
            kind, name = OperatorKind.BROADCAST_PROCESS, "Co-Process-Broadcast"
        env = self.non_broadcast_stream._env
        t = PhysicalTransformation(
            id=env._next_id(),
            name=name,
            output_type=resolved,
            kind=kind,
            input_streams=[
                self.non_broadcast_stream._transformation,
                self.broadcast_stream.input_stream._transformation,
            ],
            payload=payload,
        )
        env._add_operator(t)
        return DataStream(env, t)
