"""TwoPhaseCommitSinkFunction: pre-commit on snapshot, commit on notify, abort on restore;
its transactions kept in operator list state, as Flink's."""

from __future__ import annotations

import pytest
from function_state_testing import StateHooks

from weir.datastream.functions import (
    CheckpointedFunction,
    CheckpointListener,
    SinkFunction,
    TwoPhaseCommitSinkFunction,
)
from weir.taskmanager.operators.sinks import END_OF_INPUT_CHECKPOINT_ID


class RecordingSink(TwoPhaseCommitSinkFunction):
    """Transactions are ids; ``store`` is the outside world (shared across 'restarts')."""

    def __init__(self, store: dict) -> None:
        super().__init__()
        self.store = store

    def begin_transaction(self):
        self.store["next"] = self.store.get("next", 0) + 1
        txn = f"t{self.store['next']}"
        self.store.setdefault("staged", {})[txn] = []
        return txn

    def invoke(self, transaction, value, context):
        self.store["staged"][transaction].append(value)

    def pre_commit(self, transaction):
        self.store.setdefault("pre_committed", []).append(transaction)

    def commit(self, transaction):
        committed = self.store.setdefault("committed", {})
        if transaction not in committed:  # idempotent
            committed[transaction] = self.store["staged"][transaction]

    def abort(self, transaction):
        self.store.setdefault("aborted", []).append(transaction)
        self.store["staged"].pop(transaction, None)


def output(store: dict) -> list:
    return [
        v
        for txn in sorted(store.get("committed", {}), key=lambda t: int(t[1:]))
        for v in store["committed"][txn]
    ]


def test_is_a_sink_function_a_checkpointed_function_and_a_checkpoint_listener():
    sink = RecordingSink({})
    assert isinstance(sink, SinkFunction) and isinstance(sink, CheckpointListener)
    assert isinstance(sink, CheckpointedFunction)


def test_commit_happens_only_on_notify():
    store: dict = {}
    sink = RecordingSink(store)
    hooks = StateHooks(sink).initialize()
    sink.invoke(1, None)  # the task's call: (value, context)
    sink.invoke(2, None)
    hooks.snapshot(1)
    assert store["pre_committed"] == ["t1"] and output(store) == []
    sink.invoke(3, None)
    hooks.snapshot(2)
    sink.notify_checkpoint_complete(1)
    assert output(store) == [1, 2]
    sink.notify_checkpoint_complete(2)
    assert output(store) == [1, 2, 3]


def test_without_initialize_state_it_starts_a_transaction_on_the_first_record():
    store: dict = {}
    sink = RecordingSink(store)
    sink.invoke("a", None)
    sink.finish()
    sink.close()
    assert store["staged"] == {"t1": ["a"]} and store["pre_committed"] == ["t1"]


def test_aborted_checkpoint_is_committed_by_the_next():
    store: dict = {}
    sink = RecordingSink(store)
    hooks = StateHooks(sink).initialize()
    sink.invoke("a", None)
    hooks.snapshot(1)
    sink.notify_checkpoint_aborted(1)
    sink.invoke("b", None)
    hooks.snapshot(2)
    sink.notify_checkpoint_complete(2)
    assert output(store) == ["a", "b"]


def test_recovery_commits_pending_and_aborts_the_open_transaction():
    store: dict = {}
    sink = RecordingSink(store)
    hooks = StateHooks(sink).initialize()
    sink.invoke("a", None)
    state = hooks.snapshot(1)  # t1 pending, t2 open
    sink.invoke("lost", None)
    # crash before notify; restore from checkpoint 1
    restored = RecordingSink(store)
    restored_hooks = StateHooks(restored).initialize(state)
    assert output(store) == ["a"]
    assert "t2" in store["aborted"]
    restored.invoke("b", None)
    end_input(restored, restored_hooks)
    restored.close()
    assert output(store) == ["a", "b"]


def test_the_transactions_of_several_subtasks_are_all_recovered():
    """After scaling down, one subtask gets the list state of several: it commits the
    pending transactions and aborts the open one of each."""
    store: dict = {}
    states = []
    for _ in range(2):
        sink = RecordingSink(store)
        hooks = StateHooks(sink).initialize()
        sink.invoke("x", None)
        states.append(hooks.snapshot(1))
    restored = StateHooks(RecordingSink(store))
    for state in states:
        restored.store.restore([(state.data, state.partitions)])
    restored.initialize_with_restored_store()
    assert sorted(store["committed"]) == ["t1", "t3"]
    assert {"t2", "t4"} <= set(store["aborted"])


def end_input(sink, hooks) -> None:
    """The end of input of a job without a final checkpoint, as the sink operator drives
    it: finish, then pre-commit and commit under the end-of-input id."""
    sink.finish()
    hooks.snapshot(END_OF_INPUT_CHECKPOINT_ID)
    sink.notify_checkpoint_complete(END_OF_INPUT_CHECKPOINT_ID)


def test_finish_pre_commits_and_the_final_checkpoint_commits():
    store: dict = {}
    sink = RecordingSink(store)
    hooks = StateHooks(sink).initialize()
    sink.invoke("a", None)
    hooks.snapshot(1)
    sink.invoke("b", None)
    sink.finish()
    assert output(store) == []  # pre-committed, not committed: no checkpoint covers it yet
    state = hooks.snapshot(2)
    sink.notify_checkpoint_complete(2)
    assert output(store) == ["a", "b"]
    # A restore of the final checkpoint commits again, harmlessly, and aborts nothing.
    aborted = list(store["aborted"]) if "aborted" in store else []
    StateHooks(RecordingSink(store)).initialize(state)
    assert output(store) == ["a", "b"]
    assert store.get("aborted", []) == aborted


def test_end_of_input_without_checkpoints_commits_and_close_aborts():
    store: dict = {}
    sink = RecordingSink(store)
    hooks = StateHooks(sink).initialize()
    sink.invoke("a", None)
    hooks.snapshot(1)
    sink.invoke("b", None)
    end_input(sink, hooks)
    assert output(store) == ["a", "b"]

    failed_store: dict = {}
    failed = RecordingSink(failed_store)
    failed.invoke("x", None)
    failed.close()
    assert output(failed_store) == [] and failed_store["aborted"] == ["t1"]


def test_checkpoint_ids_must_increase():
    hooks = StateHooks(RecordingSink({})).initialize()
    hooks.snapshot(3)
    with pytest.raises(ValueError, match="must increase"):
        hooks.snapshot(2)
