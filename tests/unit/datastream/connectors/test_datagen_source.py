"""DataGeneratorSource: parallel split of the count, positions and rate limits."""

from __future__ import annotations

import pickle

import pytest

from weir.datastream.connectors.datagen import DataGeneratorSource, RateLimiterStrategy


class Ctx:
    def __init__(self, index: int = 0, parallelism: int = 1) -> None:
        self.index, self.parallelism = index, parallelism

    def get_index_of_this_subtask(self) -> int:
        return self.index

    def get_number_of_parallel_subtasks(self) -> int:
        return self.parallelism


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def drain(reader) -> list:
    out: list = []
    while (batch := reader.poll_batch(7)) is not None:
        out.extend(batch)
    return out


def test_the_count_is_split_over_subtasks():
    source = DataGeneratorSource(lambda i: f"Number: {i}", 10)
    parts = [drain(source.create_reader(Ctx(i, 3))) for i in range(3)]
    assert parts[0] == [f"Number: {i}" for i in range(4)]
    assert [x for p in parts for x in p] == [f"Number: {i}" for i in range(10)]
    assert source.is_bounded()


def test_generator_function_objects_with_map():
    class Square:
        def map(self, index):
            return index * index

    assert drain(DataGeneratorSource(Square(), 4).create_reader(Ctx())) == [0, 1, 4, 9]
    with pytest.raises(TypeError, match="generator_function"):
        DataGeneratorSource(42, 4)


def test_snapshot_and_restore():
    source = DataGeneratorSource(lambda i: i, 100)
    reader = source.create_reader(Ctx(1, 2))
    head = reader.poll_batch(7) + reader.poll_batch(7)
    splits = reader.snapshot_splits()
    assert splits == [(64, 100)]
    reader.poll_batch(7)
    restored = source.create_reader(Ctx(1, 2))
    restored.restore_splits(splits)
    assert head + drain(restored) == list(range(50, 100))
    # A split is self-contained: any subtask, at any parallelism, continues it.
    other = source.create_reader(Ctx(0, 3))
    other.restore_splits(splits)
    assert drain(other) == list(range(64, 100))
    with pytest.raises(ValueError, match="expected the \\(next, stop\\) pairs"):
        other.restore_splits([{"next": 1}])


def test_a_position_written_before_splits_still_restores():
    reader = DataGeneratorSource(lambda i: i, 100).create_reader(Ctx(1, 2))
    reader.restore_state(b'{"next": 97, "stop": 100}')
    assert drain(reader) == [97, 98, 99]


def test_per_second_limits_each_subtask_to_its_share_without_blocking():
    clock = FakeClock()
    source = DataGeneratorSource(lambda i: i, 1000, RateLimiterStrategy.per_second(20), clock=clock)
    reader = source.create_reader(Ctx(0, 2))  # 10 records/s for this subtask
    assert reader.poll_batch(100) == []  # throttled: returns at once, empty
    clock.now += 0.35
    assert reader.poll_batch(100) == [0, 1, 2]
    assert reader.poll_batch(100) == []
    clock.now += 100  # long idle: at most one second's worth is saved up
    assert len(reader.poll_batch(100)) == 10


def test_per_checkpoint_opens_again_after_each_completed_checkpoint():
    source = DataGeneratorSource(lambda i: i, 100, RateLimiterStrategy.per_checkpoint(4))
    reader = source.create_reader(Ctx())
    assert reader.poll_batch(10) == [0, 1, 2, 3]
    assert reader.poll_batch(10) == []
    reader.notify_checkpoint_complete(1)
    assert reader.poll_batch(10) == [4, 5, 6, 7]


def test_strategies_pickle_and_validate():
    pickle.loads(pickle.dumps(RateLimiterStrategy.per_second(5)))
    with pytest.raises(ValueError, match="positive"):
        RateLimiterStrategy.per_second(0)
    with pytest.raises(ValueError, match="positive"):
        RateLimiterStrategy.per_checkpoint(0)
