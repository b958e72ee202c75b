"""Replayable sources: a reader restored from a snapshot resumes right after the last
element read before it, at any cut point and parallelism; split readers restored at
another parallelism, each with its share of every old reader's splits, read every
element exactly once between them."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from weir.core.columnar import ColumnBatch
from weir.core.source import (
    CheckpointedSourceReader,
    SourceReader,
    SourceStateError,
    SplitCheckpointedSourceReader,
    assign_splits,
    create_reader,
)
from weir.datastream.connectors.collection import CollectionSource
from weir.datastream.connectors.datagen import DataGeneratorSource
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
    head = read(reader, batch, cut)
    if isinstance(reader, SplitCheckpointedSourceReader):
        splits = pickle.loads(pickle.dumps(reader.snapshot_splits(7), protocol=5))
        rest_of_old = read(reader, batch)  # the old reader goes on; the snapshot must not move
        restored = create_reader(source, ctx, restored_splits=splits)
    else:
        assert isinstance(reader, CheckpointedSourceReader)
        state = pickle.loads(pickle.dumps(reader.snapshot_state(7), protocol=5))
        rest_of_old = read(reader, batch)
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


@settings(max_examples=60, deadline=None)
@given(
    start=st.sampled_from([-50, 0, 7, (1 << 63) - 200, -(1 << 63)]),
    length=st.integers(1, 200),
    parallelism=st.integers(1, 3),
    batch=st.integers(1, 40),
)
def test_number_sequence_columns_are_its_records(
    start: int, length: int, parallelism: int, batch: int
) -> None:
    """``poll_columns`` gives the records ``poll_batch`` gives (Python ints, as PyFlink's
    longs are), in int64 columns, and leaves the reader where ``poll_batch`` does."""
    source = NumberSequenceSource(start, start + length - 1)
    for index in range(parallelism):
        ctx = Context(index, parallelism)
        by_records, by_columns = source.create_reader(ctx), source.create_reader(ctx)
        while True:
            records = by_records.poll_batch(batch)
            columns = by_columns.poll_columns(batch)
            if records is None:
                assert columns is None
                break
            assert isinstance(columns, ColumnBatch)
            assert columns.columns["f0"].dtype == "int64"
            assert columns.records() == records
            assert {type(x) for x in columns.records()} <= {int}
            assert by_columns.snapshot_splits(1) == by_records.snapshot_splits(1)


def test_number_sequence_numbers_beyond_a_long_come_as_records() -> None:
    reader = NumberSequenceSource(1 << 63, (1 << 63) + 3).create_reader(Context(0, 1))
    assert reader.poll_columns(10) == [1 << 63, (1 << 63) + 1, (1 << 63) + 2, (1 << 63) + 3]


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


def rescale(
    source: Any, old: int, new: int, cuts: list[int], batch: int
) -> tuple[list[Any], list[Any]]:
    """Read ``cuts[i]`` elements with old subtask ``i`` of ``old``, snapshot every
    reader's splits (through pickle), and read the rest with ``new`` readers, each
    restored with its share (``assign_splits``). Returns ``(what the old readers read
    before the snapshot, what the new ones read)``."""
    heads: list[Any] = []
    lists = []
    for index in range(old):
        reader = source.create_reader(Context(index, old))
        assert isinstance(reader, SplitCheckpointedSourceReader)
        heads += read(reader, batch, cuts[index % len(cuts)])
        lists.append(pickle.loads(pickle.dumps(reader.snapshot_splits(3), protocol=5)))
    tails: list[Any] = []
    for index in range(new):
        splits = assign_splits(lists, index, new)
        tails += read(create_reader(source, Context(index, new), restored_splits=splits), batch)
    return heads, tails


@settings(max_examples=150, deadline=None)
@given(
    length=st.integers(0, 300),
    old=st.integers(1, 5),
    new=st.integers(1, 5),
    cuts=st.lists(st.integers(0, 120), min_size=1, max_size=5),
    batch=st.integers(1, 40),
)
def test_number_sequence_rescaled_reads_every_number_once(
    length: int, old: int, new: int, cuts: list[int], batch: int
) -> None:
    if not length:
        return
    heads, tails = rescale(NumberSequenceSource(1, length), old, new, cuts, batch)
    assert sorted(heads + tails) == list(range(1, length + 1))


@settings(max_examples=80, deadline=None)
@given(
    count=st.integers(0, 200),
    old=st.integers(1, 4),
    new=st.integers(1, 4),
    cuts=st.lists(st.integers(0, 80), min_size=1, max_size=4),
)
def test_datagen_rescaled_generates_every_index_once(
    count: int, old: int, new: int, cuts: list[int]
) -> None:
    heads, tails = rescale(DataGeneratorSource(lambda i: -i, count), old, new, cuts, 7)
    assert sorted(heads + tails) == sorted(-i for i in range(count))


def test_a_reader_restored_with_no_splits_reads_nothing() -> None:
    # Not the numbers it would take from its index: they went to other subtasks.
    reader = create_reader(NumberSequenceSource(1, 10), Context(0, 2), restored_splits=[])
    assert reader.poll_batch(5) is None


def test_a_reader_restored_with_several_splits_reads_them_in_order() -> None:
    splits = [(7, 9), (1, 3), (20, 20)]  # the last one finished
    reader = create_reader(NumberSequenceSource(1, 10), Context(1, 3), restored_splits=splits)
    assert read(reader, 1) == [7, 8, 1, 2]
    assert reader.snapshot_splits(4) == []


def test_a_snapshot_at_the_end_restores_an_ended_reader() -> None:
    source = NumberSequenceSource(1, 10)
    reader = source.create_reader(Context(0, 1))
    read(reader, 4)
    assert reader.snapshot_splits(1) == []  # finished splits are not listed
    restored = create_reader(source, Context(0, 1), restored_splits=reader.snapshot_splits(1))
    assert restored.poll_batch(5) is None


def test_a_position_written_before_splits_still_restores() -> None:
    # NumberSequenceReader.snapshot_state returned (next, stop): now one split.
    restored = create_reader(NumberSequenceSource(1, 10), Context(0, 1), restored_state=(8, 11))
    assert read(restored, 5) == [8, 9, 10]


@settings(max_examples=200, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 12), min_size=1, max_size=6),
    new=st.integers(1, 8),
)
def test_assign_splits_deals_every_split_to_exactly_one_subtask(sizes: list[int], new: int) -> None:
    lists = [[(old, i) for i in range(size)] for old, size in enumerate(sizes)]
    shares = [assign_splits(lists, index, new) for index in range(new)]
    dealt = [split for share in shares for split in share]
    assert sorted(dealt) == sorted(split for splits in lists for split in splits)
    assert max(map(len, shares)) - min(map(len, shares)) <= 1


def test_assign_splits_refuses_an_index_outside_the_parallelism() -> None:
    with pytest.raises(ValueError, match="outside parallelism 2"):
        assign_splits([[1]], 2, 2)


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
        (NumberSequenceSource(1, 5), "nonsense", "expected the \\(next, stop\\) pairs"),
        (CollectionSource([1, 2]), 3, "this reader has 2 elements"),
        (CollectionSource([1, 2]), "1", "cannot restore position"),
    ],
)
def test_a_foreign_position_is_refused(source: Any, state: Any, match: str) -> None:
    with pytest.raises(SourceStateError, match=match):
        create_reader(source, Context(0, 1), restored_state=state)


def test_foreign_splits_are_refused() -> None:
    with pytest.raises(SourceStateError, match="expected the \\(next, stop\\) pairs"):
        create_reader(NumberSequenceSource(1, 5), Context(0, 1), restored_splits=["x"])
    with pytest.raises(SourceStateError, match="has no snapshot_splits/restore_splits"):
        create_reader(CollectionSource([1, 2]), Context(0, 1), restored_splits=[0])
