"""Task lifecycle: failures with tracebacks, cancellation while blocked, the mailbox,
print() output, and the buffer timeout in the mailbox loop (fake clock)."""

from __future__ import annotations

import dataclasses
import importlib
import pickle
import sys
import threading
import types

import cloudpickle
import pytest
from task_testing import (
    Deployment,
    EndlessSource,
    Recorder,
    TestingNetworkEnvironment,
    chain,
    collect_op,
    op,
    run_tasks,
    source_op,
    vertex,
)

from weir.core.deployment import ExecutionState
from weir.core.errors import NonRecoverableError
from weir.core.job_graph import OperatorDescriptor, OperatorKind, PartitionerKind
from weir.core.serializers import deserialize_batch, serialize_batch
from weir.core.throwable_classifier import ThrowableType
from weir.taskmanager.network.api import BufferKind
from weir.taskmanager.operators import TimersNotSupportedError, print_prefix, render
from weir.taskmanager.task import Task, TaskServices

K = OperatorKind


def user_map_that_fails(x):
    if x == 3:
        raise ValueError(f"bad record {x}")
    return x


FOREVER_STARTED = threading.Event()


PRODUCING_POLLED = threading.Event()
PRODUCING_CANCELED = threading.Event()
POLLS_AFTER_CANCEL: list[int] = []


class Producing:
    """A source whose reader always has a full batch (module level: pickled by reference)."""

    def create_reader(self, context):
        class Reader:
            def poll_batch(self, max_records):
                PRODUCING_POLLED.set()
                if PRODUCING_CANCELED.is_set():
                    POLLS_AFTER_CANCEL.append(max_records)
                return list(range(max_records))

            def close(self):
                pass

        return Reader()


class Forever:
    """A SourceFunction that runs until cancelled (module level: pickled by reference)."""

    running = True

    def run(self, ctx):
        FOREVER_STARTED.set()
        while self.running:
            ctx.collect(1)

    def cancel(self):
        self.running = False


class TestFailures:
    def test_a_user_exception_fails_the_task_with_its_traceback(self):
        closed = []

        class Closing:
            def map(self, x):
                return user_map_that_fails(x)

            def close(self):
                closed.append(True)

        d = Deployment(
            [
                vertex(
                    chain(source_op([1, 2, 3, 4]), op(K.MAP, {"function": Closing()}), collect_op())
                )
            ]
        )
        (task,), rec = run_tasks(d)
        assert task.execution_state is ExecutionState.FAILED
        cause = task.failure_cause
        assert "ValueError: bad record 3" in cause
        assert "user_map_that_fails" in cause and "Traceback" in cause
        assert rec.states[task.tdd.execution_attempt_id][-1] is ExecutionState.FAILED

    def test_a_payload_that_cannot_be_unpickled_names_the_operator(self):
        module = types.ModuleType("module_missing_on_workers")
        exec("class F:\n    def map(self, x):\n        return x\n", module.__dict__)
        sys.modules[module.__name__] = module
        try:
            payload = pickle.dumps({"function": module.F()})
        finally:
            del sys.modules[module.__name__]
        bad = op(K.MAP, {}, name="MyMap")
        bad = OperatorDescriptor(bad.operator_id, bad.name, bad.kind, payload)
        d = Deployment([vertex(chain(source_op([1]), bad, collect_op()))])
        (task,), _ = run_tasks(d)
        assert task.execution_state is ExecutionState.FAILED
        assert "operator 'MyMap'" in task.failure_cause
        assert "importable on the workers" in task.failure_cause
        assert "module_missing_on_workers" in task.failure_cause

    def test_event_time_timers_fire_at_the_end_of_bounded_input(self):
        class Timers:
            def process_element(self, value, ctx):
                ctx.timer_service().register_event_time_timer(10 * value)
                ctx.timer_service().register_event_time_timer(10 * value)  # deduplicated

            def on_timer(self, timestamp, ctx):
                yield (ctx.get_current_key(), timestamp, ctx.time_domain().name)

        sink = collect_op()
        d = Deployment(
            [
                vertex(
                    chain(
                        source_op([2, 1]),
                        op(K.KEYED_PROCESS, {"function": Timers(), "key_selectors": [lambda x: x]}),
                        sink,
                    )
                )
            ]
        )
        (task,), recorder = run_tasks(d)
        assert task.execution_state is ExecutionState.FINISHED, task.failure_cause
        # The final watermark fires both, in timestamp order.
        assert recorder.records(sink) == [(1, 10, "EVENT_TIME"), (2, 20, "EVENT_TIME")]

    def test_registering_a_timer_off_a_keyed_stream_fails_clearly(self):
        class Timers:
            def process_element(self, value, ctx):
                ctx.timer_service().register_event_time_timer(10)

        d = Deployment(
            [vertex(chain(source_op([1]), op(K.PROCESS, {"function": Timers()}), collect_op()))]
        )
        (task,), _ = run_tasks(d)
        assert TimersNotSupportedError.__name__ in task.failure_cause
        assert "only supported on a keyed stream" in task.failure_cause

    def test_keyed_state_outside_a_keyed_stream_is_refused(self):
        class Stateful:
            def open(self, ctx):
                ctx.get_state(types.SimpleNamespace(name="s"))

            def map(self, x):
                return x

        d = Deployment(
            [vertex(chain(source_op([1]), op(K.MAP, {"function": Stateful()}), collect_op()))]
        )
        (task,), _ = run_tasks(d)
        assert "only accessible by functions executed on a KeyedStream" in task.failure_cause


class ImportsWhatIsMissing:
    """Unpickles by importing a module no environment has: what pickle does for a class or
    function of a package the workers lack."""

    def __reduce__(self):
        return (importlib.import_module, ("weir_test_module_nowhere",))


class TestFailureTypes:
    """What a failed task reports besides its traceback: whether a restart can cure it."""

    def _failed(self, *operators):
        (task,), rec = run_tasks(Deployment([vertex(chain(source_op([1, 2, 3]), *operators))]))
        assert task.execution_state is ExecutionState.FAILED
        attempt = task.tdd.execution_attempt_id
        return task, rec.throwable_types[attempt][-1]

    def test_an_error_of_user_code_is_recoverable(self):
        _, kind = self._failed(op(K.MAP, {"function": user_map_that_fails}), collect_op())
        assert kind is ThrowableType.RECOVERABLE_ERROR

    def test_a_non_recoverable_error_raised_by_user_code_is_reported_so(self):
        class Refuses:
            def map(self, x):
                raise NonRecoverableError("the schema is unsupported")

        task, kind = self._failed(op(K.MAP, {"function": Refuses()}), collect_op())
        assert kind is ThrowableType.NON_RECOVERABLE_ERROR
        assert "the schema is unsupported" in task.failure_cause

    def test_user_code_naming_a_module_the_worker_lacks_is_non_recoverable(self):
        missing = dataclasses.replace(
            op(K.MAP, name="Needs a module"),
            payload=cloudpickle.dumps({"function": ImportsWhatIsMissing()}),
        )
        task, kind = self._failed(missing, collect_op())
        assert kind is ThrowableType.NON_RECOVERABLE_ERROR
        assert "UserCodeImportError" in task.failure_cause
        assert "No module named 'weir_test_module_nowhere'" in task.failure_cause


def _services(env, rec, **kw):
    return TaskServices(env, rec.report_state, rec.collect, **kw)


class TestCancel:
    def test_cancel_while_blocked_emitting(self):
        env, rec = TestingNetworkEnvironment(max_buffers=1), Recorder()
        src = vertex([op(K.SOURCE, {"source": EndlessSource()})], name="src")
        sink = vertex([collect_op()], name="sink")
        d = Deployment([src, sink])
        d.connect(src, sink, PartitionerKind.FORWARD)
        task = Task(d.tdd(src), _services(env, rec))
        task.start()
        assert env.emit_blocked.wait(10)  # nobody consumes: the writer is back-pressured
        task.cancel()
        task.cancel()  # idempotent
        assert task.join(10)
        assert task.execution_state is ExecutionState.CANCELED
        assert rec.states[task.tdd.execution_attempt_id][-1] is ExecutionState.CANCELED

    def test_cancel_while_blocked_polling(self):
        env, rec = TestingNetworkEnvironment(), Recorder()
        src = vertex([source_op([1])], name="src")
        sink = vertex([collect_op()], name="sink")
        d = Deployment([src, sink])
        d.connect(src, sink, PartitionerKind.FORWARD)
        d.config["execution.buffer-timeout.interval"] = "-1"  # poll without a deadline
        task = Task(d.tdd(sink), _services(env, rec))
        task.start()
        assert env.poll_blocked.wait(10)
        task.cancel()
        assert task.join(10)
        assert task.execution_state is ExecutionState.CANCELED

    def test_cancel_a_source_function_calls_its_cancel(self):
        started = FOREVER_STARTED
        env, rec = TestingNetworkEnvironment(), Recorder()
        v = vertex(
            [
                op(K.SOURCE, {"source_function": Forever()}),
            ],
            name="src",
        )
        d = Deployment([vertex(chain(v.operators[0], op(K.SINK, {"function": lambda x: None})))])
        task = Task(d.tdd(d.vertices[0]), _services(env, rec))
        task.start()
        assert started.wait(10)
        task.cancel()
        assert task.join(10)
        assert task.execution_state is ExecutionState.CANCELED

    def test_a_source_that_keeps_producing_stops_at_the_next_batch(self):
        """A reader that always has data (a huge NumberSequenceSource) sees the cancel
        between two of its batches: at most the batch it was polling is read after it."""
        env, rec = TestingNetworkEnvironment(), Recorder()
        d = Deployment(
            [vertex(chain(op(K.SOURCE, {"source": Producing()}), op(K.SINK, {"function": abs})))]
        )
        task = Task(d.tdd(d.vertices[0]), _services(env, rec))
        task.start()
        assert PRODUCING_POLLED.wait(10)
        PRODUCING_CANCELED.set()
        task.cancel()
        assert task.join(10)
        assert task.execution_state is ExecutionState.CANCELED, task.failure_cause
        assert len(POLLS_AFTER_CANCEL) <= 1

    def test_source_function_batches_collected_records(self):
        class Emit:
            def run(self, ctx):
                for i in range(2500):
                    ctx.collect(i)

        sink = collect_op()
        d = Deployment([vertex(chain(op(K.SOURCE, {"source_function": Emit()}), sink))])
        _, rec = run_tasks(d)
        assert rec.records(sink) == list(range(2500))


class TestMailbox:
    def test_actions_run_on_the_task_thread(self):
        env, rec = TestingNetworkEnvironment(), Recorder()
        src = vertex([source_op([1])], name="src")
        sink = vertex([collect_op()], name="sink")
        d = Deployment([src, sink])
        d.connect(src, sink, PartitionerKind.FORWARD)
        d.config["execution.buffer-timeout.interval"] = "-1"
        task = Task(d.tdd(sink), _services(env, rec))
        ran_on = []
        done = threading.Event()
        task.start()
        task.mailbox.put(lambda: (ran_on.append(threading.current_thread().name), done.set()))
        assert done.wait(10)
        assert ran_on == [task.tdd.task_name]
        task.cancel()
        assert task.join(10)


class TestPrint:
    @pytest.mark.parametrize(
        ("ident", "sub", "p", "prefix"),
        [
            (None, 0, 1, ""),
            (None, 1, 3, "2> "),
            ("out", 0, 1, "out> "),
            ("out", 2, 4, "out:3> "),
            ("", 0, 2, "1> "),
        ],
    )
    def test_prefix_as_flink(self, ident, sub, p, prefix):
        assert print_prefix(ident, sub, p) == prefix

    def test_values_render_as_python_str(self):
        assert [render(v) for v in [(1, "a"), "s", 3, 0.5, None, True, [1]]] == [
            "(1, 'a')",
            "s",
            "3",
            "0.5",
            "None",
            "True",
            "[1]",
        ]

    def test_print_sink_writes_one_line_per_record(self, tmp_path):
        target = tmp_path / "out.txt"
        d = Deployment(
            [
                vertex(
                    chain(source_op([(1, "a"), "b"]), op(K.PRINT, {"sink_identifier": "id"})),
                    parallelism=1,
                )
            ]
        )
        run_tasks(d, print_target=str(target))
        assert target.read_text() == "id> (1, 'a')\nid> b\n"


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class ScriptedNetwork:
    """A gate that plays a script; ``("tick", s)`` advances the clock and times out."""

    def __init__(self, script, clock, log):
        self.script, self.clock, self.log = list(script), clock, log

    def create_result_partition(self, descriptor):
        log = self.log

        class Partition:
            partition_id = descriptor.partition_id
            num_subpartitions = descriptor.num_subpartitions

            def emit(self, sub, buffer):
                log.append(("buffer", deserialize_batch(buffer)))

            def finish(self):
                log.append(("finish",))

            def release(self, cause=None):
                pass

        return Partition()

    def create_input_gate(self, descriptors):
        net = self

        class Gate:
            num_gates = 1

            def poll(self, timeout):
                step = net.script.pop(0)
                if step[0] == "tick":
                    net.clock.now += step[1]
                    net.log.append(("tick", step[1]))
                    return None
                net.log.append(("input", step[1]))
                if step[0] == "end":
                    return 0, 0, BufferKind.END_OF_PARTITION, b""
                return 0, 0, BufferKind.DATA, serialize_batch(step[1])

            def wakeup(self):
                pass

            def close(self):
                pass

        return Gate()


@pytest.mark.parametrize(
    ("timeout", "expected"),
    [
        (
            "100",
            [
                ("input", [1, 2]),
                ("tick", 0.05),
                ("tick", 0.06),
                ("buffer", [1, 2]),
                ("input", [3]),
                ("input", None),
                ("buffer", [3]),
                ("finish",),
            ],
        ),
        (
            "0",
            [
                ("input", [1, 2]),
                ("buffer", [1, 2]),
                ("tick", 0.05),
                ("tick", 0.06),
                ("input", [3]),
                ("buffer", [3]),
                ("input", None),
                ("finish",),
            ],
        ),
        (
            "-1",
            [
                ("input", [1, 2]),
                ("tick", 0.05),
                ("tick", 0.06),
                ("input", [3]),
                ("input", None),
                ("buffer", [1, 2, 3]),
                ("finish",),
            ],
        ),
    ],
)
def test_buffer_timeout_modes_in_the_mailbox_loop(timeout, expected):
    clock, log = FakeClock(), []
    script = [("data", [1, 2]), ("tick", 0.05), ("tick", 0.06), ("data", [3]), ("end", None)]
    net = ScriptedNetwork(script, clock, log)
    mid = vertex([op(K.MAP, {"function": lambda x: x})], name="mid")
    src, dst = vertex([source_op([])], name="src"), vertex([collect_op()], name="dst")
    d = Deployment([src, mid, dst], config={"execution.buffer-timeout.interval": timeout})
    d.connect(src, mid, PartitionerKind.FORWARD)
    d.connect(mid, dst, PartitionerKind.FORWARD)
    rec = Recorder()
    task = Task(d.tdd(mid), TaskServices(net, rec.report_state, rec.collect), clock=clock)
    task.start()
    assert task.join(10)
    assert task.execution_state is ExecutionState.FINISHED, task.failure_cause
    assert log == expected
