"""The broadcast operators driven directly: payloads built by the DataStream API, a real
keyed backend (hashmap and rocksdb), operator state backend and timer service, and a
recording output."""

from __future__ import annotations

from typing import Any

import cloudpickle
import pytest
from window_testing import FakeClock, RecordingOutput

from weir.common import Types
from weir.core.ids import OperatorId
from weir.core.job_graph import OperatorDescriptor, OperatorKind
from weir.datastream import OutputTag, StreamExecutionEnvironment
from weir.datastream.functions import (
    BroadcastProcessFunction,
    KeyedBroadcastProcessFunction,
    KeyedStateFunction,
    RuntimeContext,
)
from weir.datastream.state import (
    ListStateDescriptor,
    MapStateDescriptor,
    ValueStateDescriptor,
)
from weir.taskmanager.checkpointing.snapshot import decode_keyed_state, encode_keyed_state
from weir.taskmanager.operators.base import MAX_WATERMARK, MIN_WATERMARK, OperatorSetup
from weir.taskmanager.operators.broadcast import (
    CoBroadcastWithKeyedOperator,
    CoBroadcastWithNonKeyedOperator,
)
from weir.taskmanager.operators.contexts import TimersNotSupportedError
from weir.taskmanager.runtime_context import StreamingRuntimeContext
from weir.taskmanager.state.backend import KeyedStateBackend
from weir.taskmanager.state.hashmap import HashMapKeyedStateBackend
from weir.taskmanager.state.operator_state import (
    DefaultOperatorStateBackend,
    OperatorStateSnapshot,
    ReadOnlyBroadcastStateError,
)
from weir.taskmanager.state.rocksdb import RocksDBKeyedStateBackend

RULES = MapStateDescriptor("rules", Types.STRING(), Types.INT())
ALIASES = MapStateDescriptor("aliases", Types.STRING(), Types.STRING())
COUNT = ValueStateDescriptor("count", Types.INT())
SEEN = ListStateDescriptor("seen", Types.INT())
DROPPED = OutputTag("dropped", Types.STRING())


def payload_of(function: Any, *, keyed: bool, descriptors=(RULES,)) -> dict[str, Any]:
    """The payload the DataStream API records for ``function`` (pickled and back)."""
    env = StreamExecutionEnvironment()
    elements = env.from_collection([("a", 1)])
    if keyed:
        elements = elements.key_by(lambda x: x[0])
    result = elements.connect(env.from_collection([("a", 1)]).broadcast(*descriptors)).process(
        function
    )
    t = result._transformation
    assert t.kind is (
        OperatorKind.KEYED_BROADCAST_PROCESS if keyed else OperatorKind.BROADCAST_PROCESS
    )
    return cloudpickle.loads(cloudpickle.dumps(t.payload))  # type: ignore[no-any-return]


@pytest.fixture(params=["hashmap", "rocksdb"])
def new_backend(request, tmp_path):
    """Makes keyed backends of one kind; a test that uses it runs on both."""
    made: list[KeyedStateBackend] = []

    def make() -> KeyedStateBackend:
        if request.param == "hashmap":
            backend: KeyedStateBackend = HashMapKeyedStateBackend(128, range(128))
        else:
            directory = tmp_path / f"rocksdb-{len(made)}"
            backend = RocksDBKeyedStateBackend(128, range(128), str(directory))
        made.append(backend)
        return backend

    yield make
    for backend in made:
        backend.dispose()


class Recording(RecordingOutput):
    """RecordingOutput for batches without timestamps as well."""

    def collect(self, records: list[Any], timestamps: Any) -> None:
        super().collect(records, [None] * len(records) if timestamps is None else timestamps)


class Harness:
    """A broadcast operator of subtask 0 (of 1) on real state, with a fake clock."""

    def __init__(
        self,
        function: Any,
        *,
        keyed: bool,
        restored: OperatorStateSnapshot | None = None,
        tags: tuple[str, ...] = (),
        backend: KeyedStateBackend | None = None,
    ) -> None:
        payload = payload_of(function, keyed=keyed)
        if keyed and backend is None:
            backend = HashMapKeyedStateBackend(128, range(128))
        self.backend = backend
        self.store = DefaultOperatorStateBackend()
        if restored is not None:
            self.store.restore([(restored.data, restored.partitions)])
        self.clock = FakeClock()
        self.out = Recording()
        context = StreamingRuntimeContext(
            task_name="broadcast",
            task_name_with_subtasks="broadcast (1/1)",
            number_of_parallel_subtasks=1,
            max_number_of_parallel_subtasks=128,
            index_of_this_subtask=0,
            attempt_number=0,
            job_parameters={},
            keyed_state_backend=self.backend,
        )
        kind = OperatorKind.KEYED_BROADCAST_PROCESS if keyed else OperatorKind.BROADCAST_PROCESS
        setup = OperatorSetup(
            descriptor=OperatorDescriptor(
                OperatorId("0" * 32), "broadcast", kind, b"", input_count=2
            ),
            payload=payload,
            runtime_context=context,
            keyed_state_backend=self.backend,
            subtask_index=0,
            parallelism=1,
            segment_size=32768,
            collect=lambda *a: None,
            print_target=None,
            clock_ms=self.clock,
            operator_state_backend=self.store,
        )
        operator_type = CoBroadcastWithKeyedOperator if keyed else CoBroadcastWithNonKeyedOperator
        self.op = operator_type(setup)
        self.function = self.op.function
        self.op.open(self.out.output(tags))

    def element(self, *values: Any, timestamps: list[int | None] | None = None) -> None:
        self.op.process(list(values), timestamps)

    def broadcast(self, *values: Any, timestamps: list[int | None] | None = None) -> None:
        self.op.process2(list(values), timestamps)

    def take(self) -> list[Any]:
        return self.out.take()


class Thresholds(BroadcastProcessFunction):
    def process_element(self, value, ctx):
        limit = ctx.get_broadcast_state(RULES).get(value[0])
        yield (value[0], value[1], limit, ctx.timestamp(), ctx.current_watermark())

    def process_broadcast_element(self, value, ctx):
        ctx.get_broadcast_state(RULES).put(value[0], value[1])
        yield ("rule", value[0], value[1], ctx.timestamp())


class TestNonKeyed:
    def test_elements_read_what_broadcast_elements_wrote(self):
        h = Harness(Thresholds(), keyed=False)
        h.element(("a", 5))
        h.broadcast(("a", 3), timestamps=[70])
        h.element(("a", 6), ("b", 1), timestamps=[100, None])
        assert h.out.timestamps == [None, 70, 100, None]
        assert h.take() == [
            ("a", 5, None, MIN_WATERMARK, MIN_WATERMARK),
            ("rule", "a", 3, 70),
            ("a", 6, 3, 100, MIN_WATERMARK),
            ("b", 1, None, MIN_WATERMARK, MIN_WATERMARK),
        ]

    def test_the_watermark_is_the_minimum_of_both_inputs(self):
        h = Harness(Thresholds(), keyed=False)
        h.op.process_watermark(50)
        assert h.out.watermarks == []
        h.op.process_watermark2(30)
        h.element(("a", 1))
        assert h.out.watermarks == [30]
        assert h.take() == [("a", 1, None, MIN_WATERMARK, 30)]

    def test_the_element_side_may_not_write_the_broadcast_state(self):
        class Writes(Thresholds):
            def process_element(self, value, ctx):
                ctx.get_broadcast_state(RULES).put(value[0], value[1])

        h = Harness(Writes(), keyed=False)
        with pytest.raises(ReadOnlyBroadcastStateError, match="read-only in process_element"):
            h.element(("a", 1))

    def test_declared_states_are_checkpointed_and_undeclared_ones_made_on_use(self):
        class UsesAnother(Thresholds):
            def process_broadcast_element(self, value, ctx):
                ctx.get_broadcast_state(ALIASES).put(value[0], "alias")
                return None

        h = Harness(UsesAnother(), keyed=False)
        assert [p.name for p in h.store.snapshot().partitions] == ["rules"]
        h.broadcast(("a", 1))
        snapshot = h.store.snapshot()
        assert sorted(p.name for p in snapshot.partitions) == ["aliases", "rules"]

    def test_restored_broadcast_state_is_read_from_the_first_element(self):
        h = Harness(Thresholds(), keyed=False)
        h.broadcast(("a", 3), ("b", 4))
        snapshot = h.store.snapshot()

        restored = Harness(Thresholds(), keyed=False, restored=snapshot)
        restored.element(("b", 9))
        assert restored.take() == [("b", 9, 4, MIN_WATERMARK, MIN_WATERMARK)]

    def test_timers_need_a_keyed_stream(self):
        class SetsTimer(Thresholds):
            def process_element(self, value, ctx):
                ctx.timer_service().register_event_time_timer(10)

        h = Harness(SetsTimer(), keyed=False)
        with pytest.raises(TimersNotSupportedError, match="only supported on a keyed stream"):
            h.element(("a", 1))


class CountAndAlert(KeyedBroadcastProcessFunction):
    def open(self, runtime_context: RuntimeContext):
        self.count = runtime_context.get_state(COUNT)

    def process_element(self, value, ctx):
        self.count.update((self.count.value() or 0) + 1)
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + 10)
        if ctx.get_broadcast_state(RULES).get("drop") == value[1]:
            yield DROPPED, value[0]

    def process_broadcast_element(self, value, ctx):
        ctx.get_broadcast_state(RULES).put(value[0], value[1])
        return None

    def on_timer(self, timestamp, ctx):
        limit = ctx.get_broadcast_state(RULES).get(ctx.get_current_key())
        yield (ctx.get_current_key(), timestamp, ctx.time_domain().name, self.count.value(), limit)


class TestKeyed:
    def test_keyed_state_and_timers_with_the_broadcast_state_in_on_timer(self, new_backend):
        h = Harness(CountAndAlert(), keyed=True, backend=new_backend())
        h.element(("a", 1), ("b", 1), ("a", 2), timestamps=[100, 105, 100])
        h.broadcast(("a", 7))
        h.op.process_watermark(MAX_WATERMARK)
        assert h.take() == []  # the broadcast input holds the watermark back
        h.op.process_watermark2(MAX_WATERMARK)
        assert h.out.timestamps == [110, 115]
        assert h.take() == [("a", 110, "EVENT_TIME", 2, 7), ("b", 115, "EVENT_TIME", 1, None)]

    def test_side_outputs_by_yielding_a_tag(self, new_backend):
        h = Harness(CountAndAlert(), keyed=True, tags=("dropped",), backend=new_backend())
        h.broadcast(("drop", 2))
        h.element(("a", 1), ("b", 2), timestamps=[1, 2])
        assert h.out.side == {"dropped": [("b", 2)]}

    def test_apply_to_keyed_state_visits_every_key_with_state(self, new_backend):
        class Reset(CountAndAlert):
            def process_broadcast_element(self, value, ctx):
                seen = []

                class Visit(KeyedStateFunction):
                    def process(self, key, state):
                        seen.append((key, state.value()))
                        if value == "clear":
                            state.clear()
                        else:
                            state.update(state.value() * 10)

                ctx.apply_to_keyed_state(COUNT, Visit())
                yield (value, sorted(seen))

        h = Harness(Reset(), keyed=True, backend=new_backend())
        h.element(("a", 1), ("b", 1), ("a", 2), timestamps=[1, 2, 3])
        h.broadcast("times ten")
        assert h.take() == [("times ten", [("a", 2), ("b", 1)])]
        h.broadcast("clear")
        h.broadcast("after clearing")
        assert h.take() == [("clear", [("a", 20), ("b", 10)]), ("after clearing", [])]

    def test_apply_to_keyed_state_takes_a_callable_and_keeps_the_current_key(self, new_backend):
        class Collect(CountAndAlert):
            def process_broadcast_element(self, value, ctx):
                found = []
                ctx.apply_to_keyed_state(SEEN, lambda key, state: found.append((key, state.get())))
                yield sorted(found)

        class Remember(Collect):
            def open(self, runtime_context):
                super().open(runtime_context)
                self.seen = runtime_context.get_list_state(SEEN)

            def process_element(self, value, ctx):
                self.seen.add(value[1])
                return None

        h = Harness(Remember(), keyed=True, backend=new_backend())
        h.element(("a", 1), ("b", 2), ("a", 3))
        key_before = h.backend.current_key
        h.broadcast("x")
        assert h.take() == [[("a", [1, 3]), ("b", [2])]]
        assert h.backend.current_key == key_before

    def test_keyed_state_timers_and_broadcast_state_are_restored(self, new_backend):
        h = Harness(CountAndAlert(), keyed=True, backend=new_backend())
        h.element(("a", 1), ("b", 1), ("a", 2), timestamps=[100, 105, 100])
        h.broadcast(("a", 7))
        # As a checkpoint stores them: keyed state (timers too) in bytes, operator state.
        keyed = encode_keyed_state(h.backend.snapshot(), range(128))
        operator = h.store.snapshot()

        backend = new_backend()
        backend.restore([decode_keyed_state(keyed, range(128))])
        restored = Harness(CountAndAlert(), keyed=True, restored=operator, backend=backend)
        restored.element(("b", 5), timestamps=[200])
        restored.op.process_watermark(MAX_WATERMARK)
        restored.op.process_watermark2(MAX_WATERMARK)
        assert restored.take() == [
            ("a", 110, "EVENT_TIME", 2, 7),
            ("b", 115, "EVENT_TIME", 2, None),
            ("b", 210, "EVENT_TIME", 2, None),
        ]

    def test_apply_to_keyed_state_refuses_what_it_cannot_apply(self, new_backend):
        class Bad(CountAndAlert):
            def process_broadcast_element(self, value, ctx):
                ctx.apply_to_keyed_state(*value)

        h = Harness(Bad(), keyed=True, backend=new_backend())
        with pytest.raises(TypeError, match="KeyedStateFunction"):
            h.broadcast((COUNT, "not a function"))
        with pytest.raises(TypeError, match="descriptor of a keyed state"):
            h.broadcast((RULES.name, lambda k, s: None))

    def test_no_timers_on_the_broadcast_side(self, new_backend):
        class TimerOnBroadcast(CountAndAlert):
            def process_broadcast_element(self, value, ctx):
                ctx.timer_service().register_event_time_timer(5)

        h = Harness(TimerOnBroadcast(), keyed=True, backend=new_backend())
        with pytest.raises(TimersNotSupportedError, match="process_broadcast_element"):
            h.broadcast("x")
