"""``OutputTag``: names a side output of an operator (mirrors ``pyflink.datastream.OutputTag``)."""

from __future__ import annotations

from typing import Any

from weir.common.typeinfo import RowTypeInfo, TypeInformation, Types

__all__ = ["OutputTag"]


class OutputTag:
    """A named, typed side output: ``ctx.output(tag, value)`` in a process function,
    ``stream.get_side_output(tag)`` to read it, ``side_output_late_data(tag)`` for windows.
    """

    def __init__(self, tag_id: str, type_info: TypeInformation | list[Any] | None = None) -> None:
        if not tag_id:
            msg = "OutputTag tag_id cannot be None or empty string"
            raise ValueError(msg)
        self.tag_id = tag_id
        if type_info is None:
            self.type_info: TypeInformation = Types.PICKLED_BYTE_ARRAY()
        elif isinstance(type_info, list):
            self.type_info = RowTypeInfo(type_info)
        elif isinstance(type_info, TypeInformation):
            self.type_info = type_info
        else:
            msg = "OutputTag type_info must be None, list or TypeInformation"
            raise TypeError(msg)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OutputTag) and other.tag_id == self.tag_id

    def __hash__(self) -> int:
        return hash(("OutputTag", self.tag_id))

    def __repr__(self) -> str:
        return f"OutputTag({self.tag_id!r}, {self.type_info!r})"
