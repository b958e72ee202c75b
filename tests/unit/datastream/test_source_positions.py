"""Replayable sources: a reader restored from a snapshot resumes right after the last
element read before it, at any cut point and parallelism."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from weir.core.source import (
    CheckpointedSourceReader,
    SourceReader,
    SourceStateError,
    create_reader,
)
from weir.datastream.connectors.collection import CollectionSource
from weir.datastream.connectors.number_seq import NumberSequenceSource


class Context:
    def __init__(self, index: int, parallelism: int) -> None:
        self.index, self.parallelism = index, parallelism

    def get_index_of_this_subtask(self) -> int:
        return self.index

    def get_number_of_parallel_subtasks(self) -> int:
        return self.parallelism


def read(reader: SourceReader, batch: int, limit: int | None = None) -> list[Any]:
    out: list[Any] = []
    while limit is None or len(out) < limit:
        polled = reader.poll_batch(batch if limit is None else min(batch, limit - len(out)))
        if polled is None:
            break
        out.extend(polled)
    return out


def read_with_cut(source: Any, ctx: Context, cut: int, batch: int) -> list[Any]:
    """Read ``cut`` elements, snapshot, restore a new reader (through pickle, as from a
    checkpoint file), read the rest."""
    reader = source.create_reader(ctx)
    assert isinstance(reader, CheckpointedSourceReader)
    head = read(reader, batch, cut)
    state = pickle.loads(pickle.dumps(reader.snapshot_state(7), protocol=5))
    rest_of_old = read(reader, batch)  # the old reader goes on; the snapshot must not move
    restored = create_reader(source, ctx, restored_state=state)
    tail = read(restored, batch)
    assert tail == rest_of_old
    return head + tail


@settings(max_examples=150, deadline=None)
@given(
    start=st.integers(-50, 50),
    length=st.integers(0, 200),
    parallelism=st.integers(1, 3),
    cut=st.integers(0, 210),
    batch=st.integers(1, 40),
)
def test_number_sequence_resumes_exactly_after_the_snapshot(
    start: int, length: int, parallelism: int, cut: int, batch: int
) -> None:
    source = NumberSequenceSource(start, start + length - 1) if length else None
    if source is None:
        return
    for index in range(parallelism):
        ctx = Context(index, parallelism)
        full = read(source.create_reader(ctx), batch)
        assert read_with_cut(source, ctx, cut, batch) == full


@settings(max_examples=150, deadline=None)
@given(
    elements=st.lists(
        st.one_of(st.integers(), st.text(max_size=3), st.tuples(st.integers())), max_size=120
    ),
    parallelism=st.integers(1, 3),
    cut=st.integers(0, 130),
    batch=st.integers(1, 40),
)
def test_collection_resumes_exactly_after_the_snapshot(
    elements: list[Any], parallelism: int, cut: int, batch: int
) -> None:
    source = CollectionSource(elements)
    combined = []
    for index in range(parallelism):
        ctx = Context(index, parallelism)
        full = read(source.create_reader(ctx), batch)
        assert read_with_cut(source, ctx, cut, batch) == full
        combined += full
    assert combined == elements


def test_a_snapshot_at_the_end_restores_an_ended_reader() -> None:
    source = NumberSequenceSource(1, 10)
    reader = source.create_reader(Context(0, 1))
    read(reader, 4)
    restored = create_reader(source, Context(0, 1), restored_state=reader.snapshot_state(1))
    assert restored.poll_batch(5) is None


def test_a_reader_without_positions_still_reads_but_cannot_be_restored() -> None:
    class PlainReader:
        def poll_batch(self, max_records: int) -> list[int] | None:
            return None

        def close(self) -> None:
            pass

    class PlainSource:
        def create_reader(self, context: Any) -> PlainReader:
            return PlainReader()

    ctx = Context(0, 1)
    assert create_reader(PlainSource(), ctx).poll_batch(1) is None
    assert not isinstance(PlainReader(), CheckpointedSourceReader)
    with pytest.raises(SourceStateError, match="has no snapshot_state/restore_state"):
        create_reader(PlainSource(), ctx, restored_state=3)


@pytest.mark.parametrize(
    ("source", "state", "match"),
    [
        (NumberSequenceSource(1, 5), "nonsense", "expected the \\(next, stop\\) pair"),
        (CollectionSource([1, 2]), 3, "this reader has 2 elements"),
        (CollectionSource([1, 2]), "1", "cannot restore position"),
    ],
)
def test_a_foreign_position_is_refused(source: Any, state: Any, match: str) -> None:
    with pytest.raises(SourceStateError, match=match):
        create_reader(source, Context(0, 1), restored_state=state)
