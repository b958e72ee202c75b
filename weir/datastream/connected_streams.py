"""``ConnectedStreams``: two streams processed together by a co-function."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from weir.common.typeinfo import RowTypeInfo, TypeInformation, Types
from weir.core.job_graph import OperatorKind
from weir.datastream.data_stream import DataStream, KeyedStream
from weir.datastream.functions import (
    CoFlatMapFunction,
    CoMapFunction,
    CoProcessFunction,
    KeyedCoProcessFunction,
    KeySelector,
)
from weir.graph.transformations import PhysicalTransformation

__all__ = ["ConnectedStreams"]


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
