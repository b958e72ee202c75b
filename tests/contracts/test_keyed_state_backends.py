"""The keyed state backend contract, run against every backend (``hashmap``, ``rocksdb``):
every state kind, TTL, timers, snapshots in the canonical form restored by any backend,
and restores by key-group range at another parallelism (2 -> 3, 3 -> 1, 1 -> 4) that keep
every key's state exactly; incremental rocksdb snapshots restored the same way."""

from __future__ import annotations

import collections
import errno
import itertools
import os
import random
import struct
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from weir.common import Row
from weir.core.canonical_keys import state_key
from weir.core.checkpoint import (
    FileSystemCheckpointStorage,
    JobManagerCheckpointStorage,
    StateMetaInfo,
    read_state,
)
from weir.core.errors import ConfigurationError, StateMigrationError
from weir.core.ids import JobId
from weir.core.key_groups import key_group_range_for_operator
from weir.core.state_ttl import StateTtl
from weir.taskmanager.checkpointing.snapshot import (
    KeyGroupsSnapshot,
    decode_keyed_state,
    encode_keyed_state,
)
from weir.taskmanager.operators.timers import InternalTimerService
from weir.taskmanager.state import rocksdb_cache
from weir.taskmanager.state.backend import StateAccessError
from weir.taskmanager.state.hashmap import HashMapKeyedStateBackend
from weir.taskmanager.state.rocksdb import RocksDBKeyedStateBackend
from weir.taskmanager.state.rocksdb_full_snapshot import RocksDBFullSnapshot
from weir.taskmanager.state.rocksdb_incremental import RocksDBNativeSnapshot, restore_native
from weir.taskmanager.state.state_backend_loader import create_keyed_state_backend

M = 128
Point = collections.namedtuple("Point", "x y")
KINDS = ["hashmap", "rocksdb"]
_counter = itertools.count()


class Clock:
    def __init__(self) -> None:
        self.now = 1_000

    def __call__(self) -> int:
        return self.now


class Sum:
    def create_accumulator(self):
        return 0

    def add(self, value, acc):
        return acc + value

    def get_result(self, acc):
        return acc

    def merge(self, a, b):
        return a + b


@pytest.fixture
def make(tmp_path_factory):
    made = []

    def build(kind: str, key_groups: range = range(M), clock=None):
        if kind == "hashmap":
            backend = HashMapKeyedStateBackend(M, key_groups, clock_ms=clock)
        else:
            directory = tmp_path_factory.mktemp("rocks") / f"db{next(_counter)}"
            backend = RocksDBKeyedStateBackend(M, key_groups, str(directory), clock_ms=clock)
        made.append(backend)
        return backend

    yield build
    for backend in made:
        backend.dispose()


def _through_bytes(backend, key_groups=None):
    """A backend's canonical snapshot as a checkpoint stores it, and back."""
    encoded = encode_keyed_state(backend.snapshot(), backend.key_group_range)
    return decode_keyed_state(encoded, key_groups)


@pytest.mark.parametrize("kind", KINDS)
class TestStateKinds:
    def test_a_namespace_written_whole_equals_its_puts(self, make, kind):
        bulk, single = make(kind), make(kind)
        whole = bulk.get_namespaced_table("_weir_window_contents")
        one_by_one = single.get_namespaced_table("_weir_window_contents")
        windows = {0: {"a": 1, "b": 2}, 10_000: {"b": 3, "c": 4}}
        for namespace, values in windows.items():
            whole.put_namespace(namespace, values)
            for key, value in values.items():
                one_by_one.put(key, namespace, value)
        expected = [("a", 0, 1), ("b", 0, 2), ("b", 10_000, 3), ("c", 10_000, 4)]
        assert sorted(whole.entries()) == sorted(one_by_one.entries()) == expected
        assert _through_bytes(bulk) == _through_bytes(single)

    def test_value_state(self, make, kind):
        b = make(kind)
        v = b.get_value_state("v")
        b.current_key = "a"
        assert v.value() is None
        v.update({"n": 1})
        got = v.value()
        got["n"] = 99  # a copy on rocksdb, the object itself on the heap: never written back
        b.current_key = "b"
        assert v.value() is None
        v.update(2)
        b.current_key = "a"
        v.update(None)
        assert v.value() is None
        b.current_key = "b"
        assert v.value() == 2

    def test_list_state(self, make, kind):
        b = make(kind)
        items = b.get_list_state("l")
        b.current_key = 7
        assert list(items.get()) == [] and items.get()
        items.add(1)
        items.add_all([2, 3])
        assert list(items.get()) == [1, 2, 3]
        items.update([4])
        assert list(items) == [4]
        items.update([])
        assert list(items.get()) == []
        with pytest.raises(ValueError, match="cannot add None"):
            items.add(None)

    def test_map_state(self, make, kind):
        b = make(kind)
        m = b.get_map_state("m")
        b.current_key = ("k", 1)
        assert m.is_empty()
        m.put("x", 1)
        m.put_all({"y": 2, 3: "z"})
        assert m.get("x") == 1 and m.contains(3) and not m.contains("q")
        assert dict(m.items()) == {"x": 1, "y": 2, 3: "z"}
        it = m.keys()
        first = next(it)
        it.remove()
        assert not m.contains(first)
        m.remove("y")
        b.current_key = ("k", 2)
        assert m.is_empty()
        b.current_key = ("k", 1)
        m.clear()
        assert m.is_empty()

    def test_reducing_and_aggregating_state(self, make, kind):
        b = make(kind)
        r = b.get_reducing_state("r", lambda x, y: x + y)
        a = b.get_aggregating_state("a", Sum())
        b.current_key = 1
        for value in (1, 2, 3):
            r.add(value)
            a.add(value)
        assert r.get() == 6 and a.get() == 6
        a.add(None)
        assert a.get() is None

    def test_keys_equal_in_python_share_their_state(self, make, kind):
        b = make(kind)
        v = b.get_value_state("v")
        b.current_key = 1
        v.update("one")
        b.current_key = 1.0
        assert v.value() == "one"
        b.current_key = True
        assert v.value() == "one"

    @pytest.mark.parametrize("into", KINDS)
    def test_keys_of_any_size_keep_their_state_apart_and_restore(self, make, kind, into):
        """A key's serialized size is not limited: keys around and far beyond 64 KiB (a
        length RocksDB's layout once stored in two bytes) each keep their own state in
        every kind, and snapshot to and restore from either backend."""
        b = make(kind)
        v = b.get_value_state("v")
        m = b.get_map_state("m")
        items = b.get_list_state("l")
        keys = ["s", "x" * 65_000, "x" * 65_535, "y" * 65_535, "x" * 200_000, ("t", "z" * 70_000)]
        for n, key in enumerate(keys):
            b.current_key = key
            v.update(n)
            m.put(n, key[:3])
            items.add_all([n, -n])
        for n, key in enumerate(keys):
            b.current_key = key
            assert (v.value(), dict(m.items()), list(items.get())) == (n, {n: key[:3]}, [n, -n])
        assert sorted(b.get_keys("v"), key=repr) == sorted(keys, key=repr)
        restored = make(into)
        restored.restore([_through_bytes(b)])
        rv = restored.get_value_state("v")
        rm = restored.get_map_state("m")
        for n, key in enumerate(keys):
            restored.current_key = key
            assert (rv.value(), dict(rm.items())) == (n, {n: key[:3]})

    @pytest.mark.parametrize("into", KINDS)
    def test_every_nan_is_one_key_on_every_backend(self, make, kind, into):
        """Keys as the operators' key selectors hand them over (``state_key``): every
        float NaN, whatever its bits, alone or in a tuple, is one key, as Java's
        ``Double.equals`` and its serializer hold it, with one entry of state in one key
        group; -0.0 is the key 0, as 0.0 is. After a restore into either backend a new
        NaN finds that state again."""
        b = make(kind)
        v = b.get_value_state("v")
        timers = b.get_namespaced_table("_weir_timers")

        def nans():  # new objects each time, as records deserialized one by one give
            return [
                float("nan"),
                -float("nan"),
                struct.unpack(">d", bytes.fromhex("7ff8000000000123"))[0],
                float("inf") - float("inf"),
            ]

        shapes = {"alone": lambda n: n, "in a tuple": lambda n: ("a", n), "pair": Point}
        for name, shape in shapes.items():
            for n in nans():
                b.current_key = state_key(shape(n) if name != "pair" else Point(n, 1))
                v.update((v.value() or 0) + 1)
                timers.put(b.current_key, (10, None), name)
        for zero in (0, 0.0, -0.0):
            b.current_key = state_key(zero)
            v.update((v.value() or 0) + 1)
        for key in (*nans(), *[("a", n) for n in nans()], *[Point(n, 1) for n in nans()]):
            assert len({b.key_group_of(state_key(key)), b.key_group_of(key)}) == 1
        groups = _through_bytes(b).states["v"]
        assert sorted(len(entries) for entries in groups.values() if entries) == [1, 1, 1, 1]
        restored = make(into)
        restored.restore([_through_bytes(b)])
        rv = restored.get_value_state("v")
        for name, shape in shapes.items():
            for n in nans():
                restored.current_key = state_key(shape(n) if name != "pair" else Point(n, 1))
                assert rv.value() == 4, name
        restored.current_key = state_key(-0.0)
        assert rv.value() == 3
        assert sorted(
            ns for _, _, ns in restored.get_namespaced_table("_weir_timers").entries()
        ) == [
            "alone",
            "in a tuple",
            "pair",
        ]

    def test_get_keys_lists_the_keys_with_a_value_in_one_state(self, make, kind):
        b = make(kind)
        v = b.get_value_state("v")
        m = b.get_map_state("m")
        with_ttl = b.get_value_state("t", StateTtl(100))
        for key in ("a", ("b", 2), 3):
            b.current_key = key
            v.update(key)
            with_ttl.update(key)
        b.current_key = "c"
        m.put("x", 1)
        b.current_key = 3
        v.clear()
        expected = {"v": {"a", ("b", 2)}, "t": {"a", ("b", 2), 3}, "m": {"c"}, "none": set()}
        assert {name: set(b.get_keys(name)) for name in expected} == expected
        assert len(b.get_keys("t")) == 3  # each key once, whatever its entries
        restored = make(kind)
        restored.restore([_through_bytes(b)])  # listed before the states are registered
        assert {name: set(restored.get_keys(name)) for name in expected} == expected

    def test_ttl_expires_values_elements_and_entries(self, make, kind):
        clock = Clock()
        b = make(kind, clock=clock)
        ttl = StateTtl(100)
        v = b.get_value_state("v", ttl)
        items = b.get_list_state("l", ttl)
        m = b.get_map_state("m", ttl)
        b.current_key = "k"
        v.update(1)
        items.add(1)
        m.put("old", 1)
        clock.now += 60
        items.add(2)
        m.put("new", 2)
        assert v.value() == 1
        clock.now += 60
        assert v.value() is None
        assert list(items.get()) == [2]
        assert dict(m.items()) == {"new": 2}

    def test_ttl_full_snapshot_cleanup_leaves_expired_values_out(self, make, kind):
        clock = Clock()
        b = make(kind, clock=clock)
        v = b.get_value_state("v", StateTtl(100, cleanup_full_snapshot=True))
        for key in ("old", "new"):
            b.current_key = key
            v.update(key)
            clock.now += 80
        snapshot = b.snapshot()
        assert [k for g in snapshot.states["_weir_ttl_v"].values() for k in g] == ["new"]

    def test_timers_fire_in_timestamp_order_and_survive_a_restore(self, make, kind):
        b = make(kind)
        fired = []

        class Record:
            def on_event_time(self, ts, key, ns):
                fired.append((ts, key, ns))

            def on_processing_time(self, ts, key, ns):
                pass

        timers = InternalTimerService(b, Record(), None, lambda: 0)
        for ts, key in [(30, "a"), (10, "b"), (20, "a"), (10, "b")]:
            b.current_key = key
            timers.register_event_time_timer(None, ts)
        b.current_key = "a"
        timers.delete_event_time_timer(None, 20)
        restored = make(kind)
        restored.restore([_through_bytes(b)])
        timers.advance_watermark(15)
        assert fired == [(10, "b", None)]
        again = []
        InternalTimerService(
            restored,
            type("R", (), {"on_event_time": lambda s, *a: again.append(a)})(),
            None,
            lambda: 0,
        ).advance_watermark(100)
        assert again == [(10, "b", None), (30, "a", None)]

    def test_a_state_registered_as_another_kind_or_serializer_names_both(self, make, kind):
        b = make(kind)
        b.get_value_state("s", serializer="Integer")
        with pytest.raises(StateAccessError, match=r"'s' .*ValueState of Integer.*ListState"):
            b.get_list_state("s")
        with pytest.raises(StateAccessError, match="ValueState of Integer.*ValueState of String"):
            b.get_value_state("s", serializer="String")

    @pytest.mark.parametrize("into", KINDS)
    def test_a_restored_state_registered_as_another_kind_names_both(self, make, kind, into):
        b = make(kind)
        b.get_map_state("s")
        b.current_key = 1
        b.get_map_state("s").put(1, 2)
        restored = make(into)
        restored.restore([_through_bytes(b)])
        with pytest.raises(
            StateMigrationError, match="restored as a MapState.*now registered as a ValueState"
        ):
            restored.get_value_state("s")
        assert restored.get_map_state("s") is not None


def _apply(backend, ops):
    """Apply ``(key, op, arg)`` to every state kind; returns nothing (the model is a
    hashmap backend run alongside)."""
    v = backend.get_value_state("v")
    items = backend.get_list_state("l")
    m = backend.get_map_state("m")
    r = backend.get_reducing_state("r", lambda a, b: a + b)
    a = backend.get_aggregating_state("a", Sum())
    table = backend.get_namespaced_table("_weir_window_contents")
    for key, op, arg in ops:
        backend.current_key = key
        if op == 0:
            v.update(arg)
        elif op == 1:
            items.add(arg)
        elif op == 2:
            m.put(arg % 3, arg)
        elif op == 3:
            r.add(arg)
            a.add(arg)
        elif op == 4:
            table.put(key, arg % 2, arg)
        elif op == 5:
            m.remove(arg % 3)
        else:
            v.clear()


def _by_key(snapshot):
    """``{table: {key: value}}`` of a canonical snapshot."""
    out = {}
    for name, groups in snapshot.states.items():
        for entries in groups.values():
            out.setdefault(name, {}).update(entries)
    return {name: table for name, table in out.items() if table}


OPS = st.lists(
    st.tuples(
        st.one_of(st.integers(-50, 50), st.text(max_size=3)),
        st.integers(0, 6),
        st.integers(1, 1000),
    ),
    max_size=60,
)


def _rescale(make, kind, into, old_p, new_p, ops):
    model = make("hashmap")
    _apply(model, ops)
    expected = _by_key(model.snapshot())
    olds = []
    for i in range(old_p):
        b = make(kind, key_group_range_for_operator(M, old_p, i))
        _apply(
            b,
            [op for op in ops if op[0] is not None and b.key_group_of(op[0]) in b.key_group_range],
        )
        olds.append(encode_keyed_state(b.snapshot(), b.key_group_range))
    got: dict = {}
    for i in range(new_p):
        b = make(into, key_group_range_for_operator(M, new_p, i))
        b.restore([decode_keyed_state(s, b.key_group_range) for s in olds])
        for name, table in _by_key(b.snapshot()).items():
            for key in table:
                assert b.key_group_of(key) in b.key_group_range
            assert not (got.get(name, {}).keys() & table.keys())
            got.setdefault(name, {}).update(table)
    assert got == expected


@pytest.mark.parametrize("kind", KINDS)
def test_state_far_beyond_the_rocksdb_cache_snapshots_exactly(make, kind, monkeypatch):
    """The rocksdb backend's write-back cache flushes and drops entries many times over
    (its bounds made small); every key's state is still exactly the model's."""
    monkeypatch.setattr(rocksdb_cache, "_DIRTY_BYTES", 20_000)
    monkeypatch.setattr(rocksdb_cache, "_CLEAN_BYTES", 50_000)
    rng = random.Random(11)
    ops = [(rng.randrange(3_000), rng.randrange(7), rng.randrange(1, 1000)) for _ in range(30_000)]
    model = make("hashmap")
    _apply(model, ops)
    b = make(kind)
    _apply(b, ops)
    assert _by_key(_through_bytes(b)) == _by_key(model.snapshot())
    # And reading through the states agrees too, after the snapshot flushed everything.
    v, m = b.get_value_state("v"), b.get_map_state("m")
    mv, mm = model.get_value_state("v"), model.get_map_state("m")
    for key in range(0, 3_000, 7):
        b.current_key = model.current_key = key
        assert v.value() == mv.value()
        assert dict(m.items()) == dict(mm.items())


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("into", KINDS)
@pytest.mark.parametrize(("old_p", "new_p"), [(2, 3), (3, 1), (1, 4)])
@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=OPS)
def test_restore_by_key_group_range_keeps_every_key_exactly(make, kind, into, old_p, new_p, ops):
    _rescale(make, kind, into, old_p, new_p, ops)


@pytest.mark.parametrize("into", KINDS)
@pytest.mark.parametrize(("old_p", "new_p"), [(2, 3), (3, 1), (1, 4), (2, 2)])
@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=OPS)
def test_incremental_snapshots_restore_by_key_group_range(
    make, tmp_path_factory, into, old_p, new_p, ops
):
    storage = FileSystemCheckpointStorage(
        f"file://{tmp_path_factory.mktemp('chk')}", JobId("0" * 32)
    )
    location = storage.init_checkpoint(1)
    model = make("hashmap")
    _apply(model, ops)
    expected = _by_key(model.snapshot())
    handles = []
    for i in range(old_p):
        b = make("rocksdb", key_group_range_for_operator(M, old_p, i))
        _apply(b, [op for op in ops if b.key_group_of(op[0]) in b.key_group_range])
        native = RocksDBNativeSnapshot.take(b, 1)
        handles.append(native.write(storage, location, f"op-{i}"))
    got: dict = {}
    scratch = str(tmp_path_factory.mktemp("scratch"))
    for i in range(new_p):
        b = make(into, key_group_range_for_operator(M, new_p, i))
        restore_native(b, handles, scratch)
        for name, table in _by_key(b.snapshot()).items():
            got.setdefault(name, {}).update(table)
    assert got == expected


class TestAsynchronousFullSnapshots:
    """A rocksdb checkpoint without incremental snapshots reads a copy of the database
    off the task thread; what it writes is what ``snapshot()`` gives."""

    @settings(
        max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(ops=OPS)
    def test_the_copy_encodes_as_the_canonical_snapshot(self, make, tmp_path_factory, ops):
        b = make("rocksdb", key_group_range_for_operator(M, 2, 1))
        _apply(b, [op for op in ops if b.key_group_of(op[0]) in b.key_group_range])
        location = JobManagerCheckpointStorage(JobId("4" * 32)).init_checkpoint(1)
        handle = RocksDBFullSnapshot.take(b, 1).write(location, "op", compress=True)
        encoded = KeyGroupsSnapshot(
            M, handle.key_groups.start, read_state(handle.handle), handle.offsets, handle.state_meta
        )
        assert _by_key(decode_keyed_state(encoded)) == _by_key(b.snapshot())
        assert decode_keyed_state(encoded).meta == b.snapshot().meta

    def test_keys_ttl_filters_and_later_changes(self, make):
        clock = Clock()
        b = make("rocksdb", clock=clock)
        v = b.get_value_state("v", StateTtl(100, cleanup_full_snapshot=True))
        point = Point(1, 2)
        for key in ("old", 2.0, point, Row(a=1)):
            b.current_key = key
            v.update(str(key))
            clock.now += 30
        copy = RocksDBFullSnapshot.take(b, 1)
        b.current_key = "later"
        v.update("not in the copy")
        clock.now += 1000
        data, offsets = copy.encode()
        got = _by_key(decode_keyed_state(KeyGroupsSnapshot(M, 0, data, offsets)))["_weir_ttl_v"]
        assert {k: value for k, (value, _) in got.items()} == {
            2.0: "2.0",
            point: str(point),
            Row(a=1): str(Row(a=1)),
        }
        assert [type(k) for k in got if k == point] == [Point]


class TestIncrementalCheckpoints:
    def test_a_small_change_uploads_a_proportional_number_of_bytes(self, make, tmp_path):
        storage = FileSystemCheckpointStorage(f"file://{tmp_path}", JobId("1" * 32))
        b = make("rocksdb")
        v = b.get_value_state("v")
        payload = os.urandom(200)
        for i in range(20_000):
            b.current_key = i
            v.update(payload + i.to_bytes(4, "big"))
        first = RocksDBNativeSnapshot.take(b, 1).write(storage, storage.init_checkpoint(1), "op")
        b.notify_checkpoint_complete(1)
        for i in range(200):  # 1 % of the keys
            b.current_key = i
            v.update(payload)
        second = RocksDBNativeSnapshot.take(b, 2).write(storage, storage.init_checkpoint(2), "op")
        full = sum(f.handle.size for f in second.shared)
        assert first.incremental_size >= full * 0.9
        assert second.incremental_size < full * 0.1
        reused = {f.handle.path for f in first.shared} & {f.handle.path for f in second.shared}
        assert reused, "the second checkpoint refers to the first one's SST files"

    def test_without_a_completed_checkpoint_nothing_is_reused(self, make, tmp_path):
        storage = FileSystemCheckpointStorage(f"file://{tmp_path}", JobId("2" * 32))
        b = make("rocksdb")
        b.current_key = 1
        b.get_value_state("v").update(1)
        first = RocksDBNativeSnapshot.take(b, 1).write(storage, storage.init_checkpoint(1), "op")
        b.notify_checkpoint_aborted(1)
        second = RocksDBNativeSnapshot.take(b, 2).write(storage, storage.init_checkpoint(2), "op")
        assert not {f.handle.path for f in first.shared} & {f.handle.path for f in second.shared}

    def test_the_handle_records_the_state_kinds(self, make, tmp_path):
        storage = FileSystemCheckpointStorage(f"file://{tmp_path}", JobId("3" * 32))
        b = make("rocksdb")
        b.get_list_state("l", serializer="Integer")
        handle = RocksDBNativeSnapshot.take(b, 1).write(storage, storage.init_checkpoint(1), "op")
        assert StateMetaInfo("l", "LIST", "Integer") in handle.state_meta


def test_a_rocksdb_directory_that_cannot_be_created_names_the_key_and_path(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    config = {"state.backend.type": "rocksdb", "taskmanager.state.local.root-dirs": str(blocker)}
    with pytest.raises(ConfigurationError, match=r"taskmanager.state.local.root-dirs") as info:
        create_keyed_state_backend(
            config,
            name="op-0",
            max_parallelism=M,
            key_group_range=range(M),
            key_hasher=HashMapKeyedStateBackend(M, range(M)).key_hasher,
            clock_ms=lambda: 0,
            shared_state=True,
        )
    assert str(blocker) in str(info.value)


@pytest.fixture
def full_file_system(tmp_path):
    """A directory on a tmpfs of its own with no space left (mounting needs root; the
    test is skipped without)."""
    mount = tmp_path / "full"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        fd = os.open(mount / "filler", os.O_WRONLY | os.O_CREAT)
        try:
            while True:
                os.write(fd, b"\0" * 4096)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
        finally:
            os.close(fd)
        yield mount
    finally:
        subprocess.run(["umount", "--lazy", str(mount)], check=True)


def test_a_rocksdb_database_that_cannot_be_opened_leaves_no_directory(full_file_system):
    """The disk is full: RocksDB cannot write its first files. The error names the
    directory and the key that chooses it, and the attempt's directory is gone (a task
    that fails this way and restarts would otherwise leave one per attempt)."""
    config = {
        "state.backend.type": "rocksdb",
        "taskmanager.state.local.root-dirs": str(full_file_system / "state"),
    }
    for attempt in range(3):
        with pytest.raises(ConfigurationError, match=r"taskmanager.state.local.root-dirs") as info:
            create_keyed_state_backend(
                config,
                name=f"op-{attempt}",
                max_parallelism=M,
                key_group_range=range(M),
                key_hasher=HashMapKeyedStateBackend(M, range(M)).key_hasher,
                clock_ms=lambda: 0,
                shared_state=True,
            )
        assert str(full_file_system / "state") in str(info.value)
    assert os.listdir(full_file_system / "state" / "weir-rocksdb") == []


class TestKeyedBatchFunctionState:
    """KeyedStream.map_batches: a function called once per key of a batch sees and keeps
    the key's state on either backend; the state snapshots and restores as any other."""

    @staticmethod
    def _operator(backend):
        import cloudpickle

        from weir.common import Types
        from weir.core.ids import OperatorId
        from weir.core.job_graph import OperatorDescriptor, OperatorKind
        from weir.datastream import KeyedBatchFunction, StreamExecutionEnvironment
        from weir.datastream.state import ValueStateDescriptor
        from weir.taskmanager.operators.base import OperatorSetup, Output
        from weir.taskmanager.operators.batch_functions import KeyedMapBatchesOperator
        from weir.taskmanager.runtime_context import StreamingRuntimeContext

        class CountPerKey(KeyedBatchFunction):
            def open(self, runtime_context):
                self.count = runtime_context.get_state(ValueStateDescriptor("n", Types.LONG()))
                self.calls = 0

            def map_batches(self, key, records):
                self.calls += 1
                count = (self.count.value() or 0) + len(records)
                self.count.update(count)
                return [(key, count)]

        env = StreamExecutionEnvironment()
        stream = env.from_collection([("a", 1)]).key_by(lambda r: r[0]).map_batches(CountPerKey())
        payload = cloudpickle.loads(cloudpickle.dumps(stream._transformation.payload))
        ctx = StreamingRuntimeContext(
            task_name="t",
            task_name_with_subtasks="t (1/1)",
            number_of_parallel_subtasks=1,
            max_number_of_parallel_subtasks=M,
            index_of_this_subtask=0,
            attempt_number=0,
            job_parameters={},
            keyed_state_backend=backend,
        )
        setup = OperatorSetup(
            descriptor=OperatorDescriptor(
                OperatorId("0" * 32), "t", OperatorKind.KEYED_MAP_BATCHES, b""
            ),
            payload=payload,
            runtime_context=ctx,
            keyed_state_backend=backend,
            subtask_index=0,
            parallelism=1,
            segment_size=32768,
            collect=lambda *a: None,
            print_target=None,
            clock_ms=lambda: 0,
        )
        out: list = []
        op = KeyedMapBatchesOperator(setup)
        op.open(Output(collect=lambda batch, ts: out.extend(batch)))
        return op, out, payload["function"]

    @pytest.mark.parametrize("kind", KINDS)
    def test_one_call_per_key_per_batch_and_the_state_carries_on(self, make, kind):
        op, out, function = self._operator(make(kind))
        op.process([("a", 1), ("b", 1), ("a", 1), ("a", 1)], None)
        op.process([("b", 1), ("c", 1)], None)
        assert out == [("a", 3), ("b", 1), ("b", 2), ("c", 1)]
        assert function.calls == 4

    @pytest.mark.parametrize("kind", KINDS)
    @pytest.mark.parametrize("into", KINDS)
    def test_its_state_restores_on_any_backend(self, make, kind, into):
        op, _, _ = self._operator(make(kind))
        op.process([("a", 1), ("b", 1), ("a", 1)], None)
        snapshot = op.backend.snapshot()
        restored = make(into)
        restored.restore([snapshot])
        op2, out2, _ = self._operator(restored)
        op2.process([("a", 1), ("b", 1)], None)
        assert out2 == [("a", 3), ("b", 2)]
