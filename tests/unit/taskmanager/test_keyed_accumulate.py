"""KeyedStream.sum/min/max/min_by/max_by over batches of columns: the same results, in
the same order, and the same state as record by record, on both state backends, for
any keys and values (Hypothesis); and what falls back to records."""

from __future__ import annotations

import functools
import pickle
import random
from typing import Any

import cloudpickle
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from weir.common import Types
from weir.core.columnar import ColumnBatch, ColumnSpec
from weir.core.ids import OperatorId
from weir.core.job_graph import OperatorDescriptor, OperatorKind
from weir.datastream import StreamExecutionEnvironment
from weir.taskmanager.operators.base import OperatorSetup, Output
from weir.taskmanager.operators.one_input import ReduceOperator
from weir.taskmanager.runtime_context import StreamingRuntimeContext
from weir.taskmanager.state.hashmap import HashMapKeyedStateBackend
from weir.taskmanager.state.rocksdb import RocksDBKeyedStateBackend

PAIRS = Types.TUPLE([Types.LONG(), Types.DOUBLE()])
SPEC = ColumnSpec(("f0", "f1"), None, ("int64", "float64"))
KINDS = ["sum", "min", "max", "min_by", "max_by"]


def by_first(record: Any) -> Any:
    return record[0]


@functools.cache
def _payload(kind: str, key: Any) -> dict[str, Any]:
    env = StreamExecutionEnvironment()
    keyed = env.from_collection([(1, 1.0)], type_info=PAIRS).key_by(key)
    stream = getattr(keyed, kind)(1)
    return cloudpickle.loads(cloudpickle.dumps(stream._transformation.payload))  # type: ignore[no-any-return]


class Recorder:
    def __init__(self) -> None:
        self.records: list[Any] = []

    def collect(self, batch: Any, timestamps: Any) -> None:
        self.records += list(batch)


def _operator(payload: dict[str, Any], backend: Any) -> tuple[ReduceOperator, Recorder]:
    ctx = StreamingRuntimeContext(
        task_name="reduce",
        task_name_with_subtasks="reduce (1/1)",
        number_of_parallel_subtasks=1,
        max_number_of_parallel_subtasks=128,
        index_of_this_subtask=0,
        attempt_number=0,
        job_parameters={},
        keyed_state_backend=backend,
    )
    setup = OperatorSetup(
        descriptor=OperatorDescriptor(OperatorId("0" * 32), "reduce", OperatorKind.REDUCE, b""),
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
    recorder = Recorder()
    op = ReduceOperator(setup)
    op.open(Output(collect=recorder.collect))
    return op, recorder


batches = st.lists(
    st.lists(
        st.tuples(st.integers(0, 4), st.floats(-1e9, 1e9, allow_nan=False)),
        min_size=1,
        max_size=40,
    ),
    min_size=1,
    max_size=5,
)


def _compare(batches: list[list[tuple[int, float]]], kind: str, backends: list[Any]) -> None:
    payload = _payload(kind, by_first)
    by_records, seen_records = _operator(payload, backends[0])
    by_columns, seen_columns = _operator(payload, backends[1])
    assert by_columns.columnar
    for batch in batches:
        by_records.process(list(batch), None)
        columns = ColumnBatch(
            {
                "f0": np.array([k for k, _ in batch], dtype=np.int64),
                "f1": np.array([v for _, v in batch], dtype=np.float64),
            },
            SPEC,
        )
        by_columns.process(columns, None)
        assert seen_columns.records == seen_records.records
        assert pickle.dumps(by_columns.backend.snapshot().states) == pickle.dumps(
            by_records.backend.snapshot().states
        )


@settings(max_examples=60, deadline=None)
@given(batches=batches, kind=st.sampled_from(KINDS))
def test_columns_give_what_records_give(batches, kind):
    _compare(batches, kind, [HashMapKeyedStateBackend(128, range(128)) for _ in range(2)])


@pytest.mark.parametrize("kind", KINDS)
def test_columns_give_what_records_give_on_rocksdb(tmp_path, kind):
    rng = random.Random(kind)
    batches = [
        [(rng.randrange(5), rng.uniform(-1e9, 1e9)) for _ in range(rng.randrange(1, 40))]
        for _ in range(4)
    ]
    backends = [RocksDBKeyedStateBackend(128, range(128), str(tmp_path / n)) for n in "rc"]
    try:
        _compare(batches, kind, backends)
    finally:
        for backend in backends:
            backend.dispose()


def test_a_computed_key_takes_the_records_path(tmp_path):
    payload = _payload("sum", lambda r: r[0] % 2)
    op, _ = _operator(payload, HashMapKeyedStateBackend(128, range(128)))
    assert not getattr(op, "columnar", False)


@pytest.mark.parametrize("kind", KINDS)
def test_a_key_whose_earlier_records_are_in_state_keeps_its_first_fields(tmp_path, kind):
    payload = _payload(kind, by_first)
    op, recorder = _operator(payload, HashMapKeyedStateBackend(128, range(128)))
    op.process([(1, 5.0), (2, 1.0)], None)
    op.process(ColumnBatch({"f0": np.array([1, 1]), "f1": np.array([3.0, 9.0])}, SPEC), None)
    expected = {
        "sum": [(1, 8.0), (1, 17.0)],
        "min": [(1, 3.0), (1, 3.0)],
        "max": [(1, 5.0), (1, 9.0)],
        "min_by": [(1, 3.0), (1, 3.0)],
        "max_by": [(1, 5.0), (1, 9.0)],
    }[kind]
    assert recorder.records[2:] == expected


def test_a_batch_whose_key_column_holds_nan_goes_record_by_record():
    """A dict would take each NaN of the column for a key of its own; record by record,
    the key selector gives every NaN as the one key."""
    from weir.core.columnar import key_column
    from weir.taskmanager.operators.keyed_accumulate import accumulate_columns

    spec = ColumnSpec(("f0", "f1"), None, ("float64", "float64"))
    keys = np.array([1.5, float("nan"), float("nan")])
    batch = ColumnBatch({"f0": keys, "f1": np.array([1.0, 2.0, 3.0])}, spec)
    assert key_column(batch, 0) is None
    backend = HashMapKeyedStateBackend(128, range(128))
    state = backend.get_value_state("s")
    assert (
        accumulate_columns(
            "sum", 1, batch, key_field=0, backend=backend, value=state.value, update=state.update
        )
        is None
    )
    whole = ColumnBatch({"f0": np.array([1.5, 2.5]), "f1": np.array([1.0, 2.0])}, spec)
    assert key_column(whole, 0) is not None
