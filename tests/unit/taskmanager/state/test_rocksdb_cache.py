"""The rocksdb backend's write-back cache over a real RocksDB, and how values are stored."""

from __future__ import annotations

import collections

import pytest
from rocksdict import WriteOptions

from weir.common import Row
from weir.taskmanager.state import rocksdb, rocksdb_cache
from weir.taskmanager.state.rocksdb import RocksDBKeyedStateBackend, open_db
from weir.taskmanager.state.rocksdb_cache import WriteBackColumnFamily
from weir.taskmanager.state.rocksdb_states import dump_value, load_value

Point = collections.namedtuple("Point", "x y")


@pytest.fixture
def table(tmp_path):
    db = open_db(str(tmp_path / "db"), ["t"])
    cf = db.get_column_family("t")
    cache = WriteBackColumnFamily(db, cf, db.get_column_family_handle("t"), WriteOptions())
    yield cache, cf
    db.close()


class TestWriteBackColumnFamily:
    def test_writes_reach_rocksdb_only_when_flushed_and_are_read_back_before(self, table):
        cache, cf = table
        cache.put(b"a", b"1")
        cache.delete(b"b")
        assert cache.get(b"a") == b"1"
        assert cf.get(b"a") is None
        cache.flush()
        assert cf.get(b"a") == b"1"
        assert cache.get(b"a") == b"1"

    def test_a_deletion_hides_what_rocksdb_holds(self, table):
        cache, cf = table
        cf.put(b"a", b"old")
        assert cache.get(b"a") == b"old"
        cache.delete(b"a")
        assert cache.get(b"a") is None
        cache.flush()
        assert cf.get(b"a") is None

    def test_a_scan_sees_every_write_before_it(self, table):
        cache, _ = table
        cache.put(b"k1", b"1")
        cache.put(b"k2", b"2")
        it = cache.iter()
        it.seek_to_first()
        seen = []
        while it.valid():
            seen.append((it.key(), it.value()))
            it.next()
        assert seen == [(b"k1", b"1"), (b"k2", b"2")]

    def test_delete_range_forgets_the_cached_entries_it_covers(self, table):
        cache, _ = table
        cache.put(b"k1", b"1")
        cache.flush()
        assert cache.get(b"k1") == b"1"  # clean in the cache
        cache.put(b"k2", b"2")  # dirty
        cache.delete_range(b"k", b"l")
        assert cache.get(b"k1") is None
        assert cache.get(b"k2") is None

    def test_writes_are_flushed_once_they_hold_the_bound(self, table, monkeypatch):
        monkeypatch.setattr(rocksdb_cache, "_DIRTY_BYTES", 10_000)
        cache, cf = table
        for i in range(1000):
            cache.put(i.to_bytes(4, "big"), b"x" * 50)
        assert cf.get((0).to_bytes(4, "big")) == b"x" * 50, "flushed without being asked"
        assert cache._dirty_bytes <= 10_000

    def test_a_key_rewritten_many_times_counts_once(self, table, monkeypatch):
        monkeypatch.setattr(rocksdb_cache, "_DIRTY_BYTES", 10_000)
        cache, cf = table
        for i in range(100_000):
            cache.put(b"hot", i.to_bytes(8, "big"))
        assert cf.get(b"hot") is None, "one hot key never fills the cache"
        assert cache.get(b"hot") == (99_999).to_bytes(8, "big")

    def test_reads_cached_stay_within_the_bound(self, table, monkeypatch):
        monkeypatch.setattr(rocksdb_cache, "_CLEAN_BYTES", 10_000)
        cache, cf = table
        for i in range(1000):
            cf.put(i.to_bytes(4, "big"), b"v" * 50)
        for i in range(1000):
            assert cache.get(i.to_bytes(4, "big")) == b"v" * 50
        assert len(cache._clean) < 100


class TestValuesAsStored:
    @pytest.mark.parametrize(
        "value",
        [
            7,
            2**80,
            -1.5,
            "text",
            b"\x80bytes",
            (1, "a", None),
            [1, [2, 3]],
            {"a": {1, 2}},
            True,
            Point(1, 2),
            Row(a=1, b="x"),
            [Point(1, 2)],
        ],
    )
    def test_a_value_comes_back_equal_and_of_its_type(self, value):
        back = load_value(dump_value(value))
        assert back == value
        assert type(back) is type(value)

    def test_a_value_pickle_cannot_take_is_stored_as_the_hashmap_backend_keeps_it(self):
        offset = 3
        back = load_value(dump_value(lambda x: x + offset))
        assert back(1) == 4


class TestBackendThroughTheCache:
    def test_values_read_are_copies_whether_cached_or_not(self, tmp_path):
        b = RocksDBKeyedStateBackend(128, range(128), str(tmp_path / "db"))
        try:
            v = b.get_value_state("v")
            b.current_key = "a"
            v.update({"n": 1})
            v.value()["n"] = 99  # a copy: never written back
            assert v.value() == {"n": 1}
            b.flush()
            v.value()["n"] = 99
            assert v.value() == {"n": 1}
        finally:
            b.dispose()

    def test_a_snapshot_holds_what_is_still_in_the_cache(self, tmp_path):
        b = RocksDBKeyedStateBackend(128, range(128), str(tmp_path / "db"))
        try:
            v = b.get_value_state("v")
            for i in range(100):
                b.current_key = i
                v.update(i * 2)
            snap = b.snapshot()
            got = {k: x for group in snap.states["v"].values() for k, x in group.items()}
            assert got == {i: i * 2 for i in range(100)}
        finally:
            b.dispose()


class TestOriginalsOfKeys:
    def test_originals_of_keys_without_state_are_swept_and_live_ones_kept(
        self, tmp_path, monkeypatch
    ):
        monkeypatch.setattr(rocksdb, "_KEYS_SWEEP_EVERY", 100)
        monkeypatch.setattr(rocksdb, "_KEYS_SWEEP_ENTRIES", 200)
        b = RocksDBKeyedStateBackend(128, range(128), str(tmp_path / "db"))
        try:
            v = b.get_value_state("v")
            timers = b.get_namespaced_table("_weir_timers")
            for i in range(5000):
                b.current_key = Point(i, 0)  # a namedtuple: its original is kept aside
                v.update(i)
                if i >= 10:
                    b.current_key = Point(i - 10, 0)
                    v.clear()
            timers.put(Point(-1, 0), (5, None), "a timer keeps its key alive")
            for i in range(5000, 5300):  # new keys, whose state is gone at once
                b.current_key = Point(i, 1)
                v.update(i)
                v.clear()
            it = b.column_families()[rocksdb.KEYS_CF].iter()
            it.seek_to_first()
            originals = 0
            while it.valid():
                originals += 1
                it.next()
            assert originals < 1000, "the originals of 5 300 keys, 11 of them alive"
            snap = b.snapshot()
            alive = {k for group in snap.states["v"].values() for k in group}
            assert alive == {Point(i, 0) for i in range(4990, 5000)}
            assert {type(k) for k in alive} == {Point}
            (timer_key, _, _) = next(iter(timers.entries()))
            assert type(timer_key) is Point
        finally:
            b.dispose()
