"""The collect sink tags every batch with its checkpoint epoch."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from task_testing import Recorder, collect_op

from weir.core.errors import RecordSerializationError
from weir.core.job_graph import SerializerKind
from weir.taskmanager.operators.base import OperatorSetup
from weir.taskmanager.operators.chain import OperatorChain
from weir.taskmanager.runtime_context import StreamingRuntimeContext


def _collect_chain(
    recorder: Recorder, restored_checkpoint_id: int = 0, payload: dict[str, Any] | None = None
) -> OperatorChain:
    descriptor = collect_op()
    context = StreamingRuntimeContext(
        task_name="collect",
        task_name_with_subtasks="collect (1/1)",
        number_of_parallel_subtasks=1,
        max_number_of_parallel_subtasks=128,
        index_of_this_subtask=0,
        attempt_number=0,
        job_parameters={},
    )
    setup = OperatorSetup(
        descriptor=descriptor,
        payload=payload or {},
        runtime_context=context,
        keyed_state_backend=None,
        subtask_index=0,
        parallelism=1,
        segment_size=32 * 1024,
        collect=recorder.collect,
        print_target=None,
        clock_ms=lambda: 0,
        restored_checkpoint_id=restored_checkpoint_id,
    )
    chain = OperatorChain([setup], [])
    chain.open()
    return chain


def _feed(chain: OperatorChain, records: list[Any]) -> None:
    chain.input(0)(records, None)


class TestCollectOperatorEpochs:
    def test_batches_carry_the_last_checkpoint_taken_before_them(self):
        recorder = Recorder()
        chain = _collect_chain(recorder)
        _feed(chain, [1, 2])
        # The checkpoint's synchronous part: flush, then the hook.
        chain.flush()
        chain.snapshot_state(7)
        _feed(chain, [3])
        chain.flush()
        chain.snapshot_state(9)
        chain.finish()

        assert recorder.collect_epochs == [0, 7, 9]
        assert [c[2:] for c in recorder.collect_calls] == [(2, False), (1, False), (0, True)]

    def test_a_restored_sink_starts_in_the_restored_checkpoint(self):
        recorder = Recorder()
        chain = _collect_chain(recorder, restored_checkpoint_id=12)
        _feed(chain, ["x"])
        chain.finish()

        assert recorder.collect_epochs == [12, 12]


class TestCollectOperatorSerializer:
    def test_an_untyped_stream_keeps_bytearrays(self):
        recorder = Recorder()
        chain = _collect_chain(recorder, payload={"serializer": SerializerKind.PICKLE})
        _feed(chain, [bytearray(b"ab"), b"cd"])
        chain.finish()

        (records,) = recorder.collected.values()
        assert records == [bytearray(b"ab"), b"cd"]
        assert type(records[0]) is bytearray


class TestCollectOperatorErrors:
    def test_an_unpicklable_record_is_named_with_what_to_do(self):
        chain = _collect_chain(Recorder())
        _feed(chain, [1, ("lock", threading.Lock()), 3])
        with pytest.raises(RecordSerializationError) as caught:
            chain.flush()
        message = str(caught.value)
        assert "execute_and_collect()" in message
        assert "('lock', <unlocked _thread.lock object" in message
        assert "a tuple; TypeError: cannot pickle '_thread.lock' object" in message
        assert "open() of the function" in message
        assert isinstance(caught.value, TypeError)
