"""Errors about a job's records and keys name the user's code that made them: the key
selector whose key the state backend cannot hash, the operator whose record cannot be
pickled."""

from __future__ import annotations

import threading

from task_testing import Deployment, chain, collect_op, op, run_tasks, source_op, vertex

from weir.core.deployment import ExecutionState
from weir.core.job_graph import OperatorKind, PartitionerKind
from weir.taskmanager.operators.key_guard import describe_function

K = OperatorKind


def by_first_as_list(record):
    return [record[0]]


class ByFirstAsList:
    def get_key(self, record):
        return [record[0]]


class KeyedConcat:
    """A keyed co-flat-map whose second input's key is a list."""

    def open(self, ctx):
        class D:
            name = "seen"

        self.seen = ctx.get_state(D())

    def flat_map1(self, v):
        self.seen.update(v)
        return []

    def flat_map2(self, v):
        yield self.seen.value()


def _run_one_vertex(*operators):
    (task,), rec = run_tasks(Deployment([vertex(chain(*operators))]))
    return task, rec


class TestUnhashableKeys:
    def test_a_keyed_reduce_names_the_key_selector_and_the_key(self):
        task, _ = _run_one_vertex(
            source_op([("a", 1), ("b", 2)]),
            op(
                K.REDUCE,
                {"function": lambda x, y: x, "key_selectors": [by_first_as_list]},
                name="totals",
            ),
            collect_op(),
        )
        assert task.execution_state is ExecutionState.FAILED
        cause = task.failure_cause
        assert "UnhashableKeyError: the key selector by_first_as_list (" in cause
        assert "test_user_code_errors.py:" in cause
        assert "of operator 'totals' returned a key that cannot be hashed: ['a']" in cause
        assert "(a list; unhashable type: 'list')" in cause
        assert "return a tuple instead of a list" in cause
        # The state code's own error stays below as the cause.
        assert "TypeError: unhashable type: 'list'" in cause

    def test_the_second_input_of_a_keyed_co_operator_names_its_own_selector(self):
        left = vertex([source_op([("a", 1)])], name="left")
        right = vertex([source_op([("a", "x")])], name="right")
        co = vertex(
            chain(
                op(
                    K.CO_FLAT_MAP,
                    {
                        "function": KeyedConcat(),
                        "key_selectors": [lambda r: r[0], ByFirstAsList()],
                    },
                    input_count=2,
                    name="join",
                ),
                collect_op(),
            ),
            name="co",
        )
        d = Deployment([left, right, co])
        d.connect(left, co, PartitionerKind.FORWARD, input_index=0)
        d.connect(right, co, PartitionerKind.FORWARD, input_index=1)
        tasks, _ = run_tasks(d)
        (joined,) = [t for t in tasks if t.tdd.task_name.startswith("co")]
        assert joined.execution_state is ExecutionState.FAILED
        assert (
            "UnhashableKeyError: the key selector ByFirstAsList.get_key (" in joined.failure_cause
        )
        assert "of operator 'join'" in joined.failure_cause

    def test_a_users_own_unhashable_error_with_hashable_keys_is_left_as_it_is(self):
        def collides(value):
            return {[value]: 1}  # the user's own bug, not the key's

        task, _ = _run_one_vertex(
            source_op([1, 2]),
            op(K.MAP, {"function": collides, "key_selectors": [lambda v: v]}),
            collect_op(),
        )
        assert task.execution_state is ExecutionState.FAILED
        assert "TypeError: unhashable type: 'list'" in task.failure_cause
        assert "UnhashableKeyError" not in task.failure_cause
        assert "collides" in task.failure_cause

    def test_hashable_keys_run_as_before(self):
        _, rec = _run_one_vertex(
            source_op([("a", 1), ("a", 2)]),
            op(
                K.REDUCE,
                {
                    "function": lambda x, y: (x[0], x[1] + y[1]),
                    "key_selectors": [lambda r: (r[0],)],
                },
            ),
            sink := collect_op(),
        )
        assert rec.records(sink) == [("a", 1), ("a", 3)]


class TestUnpicklableRecords:
    def test_the_operator_that_emitted_the_record_is_named(self):
        def with_lock(value):
            return value, threading.Lock()

        src = vertex(
            chain(source_op([1, 2]), op(K.MAP, {"function": with_lock}, name="attach lock")),
            name="src",
        )
        down = vertex([collect_op()], name="down")
        d = Deployment([src, down])
        d.connect(src, down, PartitionerKind.REBALANCE)
        (producer,), _ = run_tasks(d, only=[src])  # the consumer would wait for ever
        assert producer.execution_state is ExecutionState.FAILED
        cause = producer.failure_cause
        assert "RecordSerializationError: operator 'attach lock' emitted a record" in cause
        assert "(a tuple; TypeError: cannot pickle '_thread.lock' object)" in cause


def test_functions_are_described_as_their_authors_know_them():
    assert describe_function(by_first_as_list).startswith("by_first_as_list (")
    assert describe_function(by_first_as_list).endswith(
        f"test_user_code_errors.py:{by_first_as_list.__code__.co_firstlineno})"
    )
    assert describe_function(ByFirstAsList().get_key).startswith("ByFirstAsList.get_key (")
    assert describe_function(lambda r: r).startswith("test_functions_are_described")
    assert describe_function(len) == "len"
