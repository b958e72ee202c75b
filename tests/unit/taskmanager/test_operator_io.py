"""Each operator of a chain counts what it received and handed on, per batch: what a
chained operator received is what the one before it emitted on its main output, side
outputs count as records out, and the head of a chain counts what the task hands it."""

from __future__ import annotations

import dataclasses

from task_testing import Deployment, chain, collect_op, op, run_tasks, source_op, vertex

from weir.core.job_graph import OperatorKind, PartitionerKind
from weir.taskmanager.operators.base import MAX_WATERMARK

K = OperatorKind


class Split:
    """Every record to the main output; odd ones to the side output ``odd`` too."""

    def process_element(self, value, ctx):
        yield value
        if value % 2:
            yield Tag(), value


class Tag:
    tag_id = "odd"


def _counts(task, descriptor):
    io = task.chain.io[descriptor.operator_id]
    return io.num_records_in, io.num_records_out


def test_each_operator_of_a_chain_counts_its_own_records():
    source = source_op(list(range(10)), batch=3)
    double = op(K.MAP, {"function": lambda x: x * 2})
    thirds = op(K.FILTER, {"function": lambda x: x % 3 == 0})
    sink = collect_op()
    d = Deployment([vertex(chain(source, double, thirds, sink))])
    (task,), rec = run_tasks(d)
    kept = [x * 2 for x in range(10) if (x * 2) % 3 == 0]
    assert rec.records(sink) == kept
    assert _counts(task, source) == (0, 10)
    assert _counts(task, double) == (10, 10)
    assert _counts(task, thirds) == (10, len(kept))
    assert _counts(task, sink) == (len(kept), 0)
    # The end of input's watermark went through every operator.
    for descriptor in (source, double, thirds):
        assert task.chain.io[descriptor.operator_id].output_watermark == MAX_WATERMARK


def test_side_outputs_count_as_records_out_but_not_into_the_chained_operator():
    upstream = vertex(chain(source_op(list(range(6)), batch=4)), parallelism=1)
    split = op(K.PROCESS, {"function": Split()})
    main = collect_op()
    downstream = vertex(chain(split, main), parallelism=1)
    side = vertex(chain(collect_op()), parallelism=1)
    d = Deployment([upstream, downstream, side])
    d.connect(upstream, downstream, PartitionerKind.FORWARD)
    edge = d.connect(downstream, side, PartitionerKind.FORWARD, source_operator=split)
    d.edges[-1] = dataclasses.replace(edge, output_tag="odd")
    tasks, _ = run_tasks(d)
    task = next(t for t in tasks if t.tdd.vertex.vertex_id == downstream.vertex_id)
    # The head counts what its input gate handed it.
    assert _counts(task, split) == (6, 6 + 3)
    assert _counts(task, main) == (6, 0)


def test_a_key_selector_gives_every_nan_as_one_key_and_keeps_its_field_and_name():
    from weir.core.field_access import field_of
    from weir.taskmanager.operators.functions import key_selector
    from weir.taskmanager.operators.key_guard import describe_function

    def by_name(record):
        return record.name

    by_position = key_selector(lambda record: record[0])
    keys = [by_position((n, 1)) for n in (float("nan"), -float("nan"))]
    assert keys[0] is keys[1]
    assert by_position(("a", 1)) == "a" and by_position(((2.5, float("nan")), 1))[1] is keys[0]
    assert field_of(by_position) == 0
    named = key_selector(by_name)
    assert field_of(named) == "name"
    assert describe_function(named).startswith("test_a_key_selector_gives_every_nan")
