"""``CollectionSource``: the elements of a Python collection, read by one subtask."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import cloudpickle

from weir.common.typeinfo import RowTypeInfo, TypeInformation
from weir.core.source import SourceReaderContext, SourceStateError
from weir.graph.user_code import shipping_user_modules

__all__ = ["CollectionSource"]


class CollectionReader:
    """Its position is the index of the next element to emit."""

    def __init__(self, elements: list[Any]) -> None:
        self._elements = elements
        self._position = 0

    def poll_batch(self, max_records: int) -> list[Any] | None:
        if self._position >= len(self._elements):
            return None
        batch = self._elements[self._position : self._position + max_records]
        self._position += len(batch)
        return batch

    def snapshot_state(self, checkpoint_id: int) -> int:
        return self._position

    def restore_state(self, state: int) -> None:
        if not isinstance(state, int) or not 0 <= state <= len(self._elements):
            msg = (
                f"CollectionSource: cannot restore position {state!r}: this reader has "
                f"{len(self._elements)} elements; the checkpoint belongs to another "
                "collection"
            )
            raise SourceStateError(msg)
        self._position = state

    def close(self) -> None:
        self._elements = []
        self._position = 0


class CollectionSource:
    """The elements, pickled when the job is built (later changes to the collection do not
    show), emitted in order by subtask 0 (``from_collection`` runs it with parallelism 1).

    With a Row type, tuples, lists and dicts become Rows named by that type, as in PyFlink.
    """

    def __init__(self, elements: Iterable[Any], type_info: TypeInformation | None = None) -> None:
        values = list(elements)
        if isinstance(type_info, RowTypeInfo):
            values = [type_info.to_row(v) for v in values]
        self._count = len(values)
        with shipping_user_modules():
            self._blob = cloudpickle.dumps(values)

    def is_bounded(self) -> bool:
        return True

    def create_reader(self, context: SourceReaderContext) -> CollectionReader:
        if context.get_index_of_this_subtask() != 0:
            return CollectionReader([])
        return CollectionReader(cloudpickle.loads(self._blob))

    def __len__(self) -> int:
        return self._count

    def __repr__(self) -> str:
        return f"CollectionSource({self._count} elements)"
