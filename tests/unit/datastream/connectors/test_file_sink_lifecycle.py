"""FileSink: in-progress → pending → finished, driven through the checkpoint hooks."""

from __future__ import annotations

import pickle
import re
from collections.abc import Iterator

import fsspec
import pytest
from function_state_testing import StateHooks

from weir.core.errors import CheckpointError
from weir.datastream.connectors.file_system import (
    BucketAssigner,
    Encoder,
    FileSink,
    OutputFileConfig,
    RollingPolicy,
    java_pattern_to_strftime,
)
from weir.datastream.functions import CheckpointedFunction, SinkFunction
from weir.taskmanager.operators.sinks import END_OF_INPUT_CHECKPOINT_ID
from weir.taskmanager.state.operator_state import OperatorStateSnapshot


class FakeClock:
    def __init__(self, now_ms: int = 1_700_000_000_000) -> None:
        self.now = now_ms

    def __call__(self) -> int:
        return self.now


def make_sink(
    base: str,
    clock: FakeClock | None = None,
    *,
    rolling: RollingPolicy | None = None,
    config: OutputFileConfig | None = None,
    assigner: BucketAssigner | None = None,
    check_interval: int = 60_000,
) -> FileSink:
    """A sink whose state hooks the test drives (``snapshot``, ``restore``), initialized
    for a fresh start as the task initializes it."""
    return initialized(
        FileSink(
            base,
            Encoder.simple_string_encoder(),
            bucket_assigner=assigner or BucketAssigner.base_path_bucket_assigner(),
            rolling_policy=rolling or RollingPolicy.default_rolling_policy(),
            output_file_config=config or OutputFileConfig.builder().build(),
            bucket_check_interval=check_interval,
            clock=clock or FakeClock(),
        )
    )


_HOOKS: dict[int, StateHooks] = {}


def initialized(sink: FileSink, restored: OperatorStateSnapshot | None = None) -> FileSink:
    _HOOKS[id(sink)] = StateHooks(sink).initialize(restored)
    return sink


def restore(sink: FileSink, state: OperatorStateSnapshot) -> None:
    """The sink's state hooks as a task restoring ``state`` calls them."""
    initialized(sink, state)


def snapshot(sink: FileSink, checkpoint_id: int) -> OperatorStateSnapshot:
    """Checkpoint ``checkpoint_id`` of the sink: what the task stores."""
    return _HOOKS[id(sink)].snapshot(checkpoint_id)


def end_input(sink: FileSink) -> None:
    """The end of input of a job that takes no final checkpoint, as the sink operator
    drives it: finish, then pre-commit and commit under the end-of-input id."""
    sink.finish()
    snapshot(sink, END_OF_INPUT_CHECKPOINT_ID)
    sink.notify_checkpoint_complete(END_OF_INPUT_CHECKPOINT_ID)


def visible(base: str) -> list[str]:
    fs, root = fsspec.core.url_to_fs(base)
    if not fs.exists(root):
        return []
    return sorted(
        p[len(root.rstrip("/")) + 1 :]
        for p in fs.find(root)
        if not p.rpartition("/")[2].startswith(".")
    )


def hidden(base: str) -> list[str]:
    fs, root = fsspec.core.url_to_fs(base)
    if not fs.exists(root):
        return []
    return sorted(
        p.rpartition("/")[2] for p in fs.find(root) if p.rpartition("/")[2].startswith(".")
    )


def committed_lines(base: str) -> list[str]:
    fs, root = fsspec.core.url_to_fs(base)
    lines: list[str] = []
    for name in visible(base):
        lines.extend(fs.cat_file(f"{root.rstrip('/')}/{name}").decode().splitlines())
    return lines


def write(sink: FileSink, values) -> None:
    for v in values:
        sink.invoke(v, None)


@pytest.fixture(params=["file", "memory"])
def base(request, tmp_path) -> Iterator[str]:
    if request.param == "file":
        yield f"file://{tmp_path}/out"
        return
    url = f"memory://{tmp_path.name}/out"
    yield url
    fs, root = fsspec.core.url_to_fs(url)
    if fs.exists(root):
        fs.rm(root, recursive=True)


class TestFileLifecycle:
    def test_is_a_sink_function_with_checkpoint_hooks(self, base):
        sink = make_sink(base)
        assert isinstance(sink, SinkFunction)
        assert isinstance(sink, CheckpointedFunction)
        for hook in (
            "snapshot_state",
            "notify_checkpoint_complete",
            "notify_checkpoint_aborted",
            "initialize_state",
            "finish",
        ):
            assert callable(getattr(sink, hook))

    def test_nothing_is_visible_before_the_checkpoint_completes(self, base):
        sink = make_sink(base, rolling=RollingPolicy.on_checkpoint_rolling_policy())
        write(sink, ["a", "b"])
        assert visible(base) == []
        assert len(hidden(base)) == 1 and ".inprogress." in hidden(base)[0]
        snapshot(sink, 1)  # pre-commit: the file is pending, still hidden
        assert visible(base) == []
        assert len(hidden(base)) == 1
        sink.notify_checkpoint_complete(1)
        assert committed_lines(base) == ["a", "b"]
        assert hidden(base) == []

    def test_pending_files_wait_for_their_own_checkpoint(self, base):
        sink = make_sink(base, rolling=RollingPolicy.on_checkpoint_rolling_policy())
        write(sink, ["a"])
        snapshot(sink, 1)
        write(sink, ["b"])
        snapshot(sink, 2)
        sink.notify_checkpoint_complete(1)
        assert committed_lines(base) == ["a"]
        sink.notify_checkpoint_complete(2)
        assert sorted(committed_lines(base)) == ["a", "b"]

    def test_an_aborted_checkpoint_is_committed_with_the_next_one(self, base):
        sink = make_sink(base, rolling=RollingPolicy.on_checkpoint_rolling_policy())
        write(sink, ["a"])
        snapshot(sink, 1)
        sink.notify_checkpoint_aborted(1)
        write(sink, ["b"])
        snapshot(sink, 2)
        assert visible(base) == []
        sink.notify_checkpoint_complete(2)
        assert sorted(committed_lines(base)) == ["a", "b"]

    def test_finish_commits_nothing_until_its_final_checkpoint_completes(self, base):
        """FLIP-147: the end of input closes the files; the task's final checkpoint, taken
        after it, commits them."""
        sink = make_sink(base)
        write(sink, ["a"])
        snapshot(sink, 1)
        sink.notify_checkpoint_complete(1)
        write(sink, ["b"])
        sink.finish()
        assert visible(base) == []
        snapshot(sink, 2)
        assert visible(base) == []
        sink.notify_checkpoint_complete(2)
        assert committed_lines(base) == ["a", "b"]
        assert hidden(base) == []

    def test_restoring_the_final_checkpoint_commits_its_files_once(self, base):
        """A failure after the final checkpoint completed but before its notification
        committed anything: the restore commits the files, exactly once."""
        sink = make_sink(base)
        write(sink, ["a", "b"])
        sink.finish()
        state = snapshot(sink, 3)
        sink.close()  # the task is lost before notify_checkpoint_complete(3)
        assert visible(base) == []
        restored = make_sink(base)
        restore(restored, state)
        end_input(restored)  # the restored task has no input left
        assert committed_lines(base) == ["a", "b"]
        assert hidden(base) == []

    def test_default_policy_keeps_a_small_file_in_progress_across_checkpoints(self, base):
        sink = make_sink(base)
        write(sink, ["a"])
        snapshot(sink, 1)
        sink.notify_checkpoint_complete(1)
        assert visible(base) == []  # still in progress: not rolled yet
        write(sink, ["b"])
        end_input(sink)
        assert committed_lines(base) == ["a", "b"]
        assert hidden(base) == []

    def test_finish_commits_everything_and_close_commits_nothing(self, base):
        sink = make_sink(base, rolling=RollingPolicy.on_checkpoint_rolling_policy())
        write(sink, ["a"])
        snapshot(sink, 1)
        write(sink, ["b"])
        end_input(sink)
        sink.close()
        assert sorted(committed_lines(base)) == ["a", "b"]

        other = f"{base}-failed"
        failed = make_sink(other)
        write(failed, ["x"])
        failed.close()  # a failure: nothing shows
        assert visible(other) == []
        assert hidden(other) == []  # no checkpoint holds its file: it goes

    def test_snapshot_ids_must_increase(self, base):
        sink = make_sink(base, rolling=RollingPolicy.on_checkpoint_rolling_policy())
        write(sink, ["a"])
        snapshot(sink, 2)
        write(sink, ["b"])
        with pytest.raises(CheckpointError, match="must increase"):
            snapshot(sink, 1)


class TestRecovery:
    def test_crash_after_a_checkpoint_shows_exactly_the_records_before_it(self, base):
        clock = FakeClock()
        sink = make_sink(base, clock, rolling=RollingPolicy.default_rolling_policy(part_size=10))
        before = [f"before-{i}" for i in range(7)]
        write(sink, before)  # rolls several files by size; the last stays in progress
        state = snapshot(sink, 1)
        write(sink, [f"after-{i}" for i in range(5)])  # the uncommitted tail
        snapshot(sink, 2)  # checkpoint 2 never completes
        write(sink, ["tail"])
        # crash: no notify, no close. A new instance restores checkpoint 1.
        restored = make_sink(
            base, clock, rolling=RollingPolicy.default_rolling_policy(part_size=10)
        )
        restore(restored, state)
        # The pending files and the checkpointed part of the in-progress one.
        assert sorted(committed_lines(base)) == sorted(before)
        assert hidden(base) == []
        snapshot(restored, 2)
        restored.notify_checkpoint_complete(2)
        end_input(restored)
        lines = committed_lines(base)
        assert sorted(lines) == sorted(before)  # exactly once: no tail, no duplicate
        assert hidden(base) == []

    def test_close_keeps_the_files_a_snapshot_holds_for_the_restore(self, base):
        sink = make_sink(base)  # the default policy: in progress across checkpoints
        write(sink, ["a"])
        state = snapshot(sink, 1)
        write(sink, ["b"])
        sink.close()  # cancelled before checkpoint 1 completed
        assert len(hidden(base)) == 1  # held by checkpoint 1
        restored = make_sink(base)
        restore(restored, state)
        end_input(restored)
        assert committed_lines(base) == ["a"]
        assert hidden(base) == []

    def test_a_writer_that_outlives_a_restore_of_its_checkpoint_leaves_nothing_hidden(self, base):
        """A deposed leader's task runs on for a moment after its successor restored the
        job from checkpoint 1: the file it opened meanwhile, which the restore could not
        see, it deletes itself when it is cancelled."""
        rolling = RollingPolicy.on_checkpoint_rolling_policy()
        deposed = make_sink(base, rolling=rolling)
        write(deposed, ["a", "b"])
        state = snapshot(deposed, 1)
        successor = make_sink(base, rolling=rolling)
        restore(successor, state)
        write(deposed, ["deposed-1", "deposed-2"])
        assert len(hidden(base)) == 1
        deposed.close()
        assert hidden(base) == []
        write(successor, ["c"])
        end_input(successor)
        assert sorted(committed_lines(base)) == ["a", "b", "c"]
        assert hidden(base) == []

    def test_restoring_twice_from_the_same_checkpoint(self, base):
        sink = make_sink(base)
        write(sink, ["a", "b"])
        state = snapshot(sink, 1)
        write(sink, ["lost"])
        first = make_sink(base)
        restore(first, state)
        write(first, ["lost again"])
        snapshot(first, 2)  # never completes
        second = make_sink(base)
        restore(second, state)
        write(second, ["c"])
        end_input(second)
        assert sorted(committed_lines(base)) == ["a", "b", "c"]
        assert hidden(base) == []  # "lost again" went with the first run's files

    def test_runs_that_checkpointed_nothing_leave_no_hidden_files(self, base):
        """The checkpoint directory is full for a while: every checkpoint after the first
        fails, and each failure restores checkpoint 1 in a new run, which had rolled
        files for its own failed checkpoints. Once checkpoints complete again, nothing
        those runs wrote is left, hidden or visible."""
        rolling = RollingPolicy.on_checkpoint_rolling_policy()
        sink = make_sink(base, rolling=rolling)
        write(sink, ["a"])
        state = snapshot(sink, 1)
        sink.notify_checkpoint_complete(1)
        write(sink, ["lost-0"])
        snapshot(sink, 2)  # fails: the directory is full
        checkpoint_id = 2
        for run in range(1, 4):
            sink = make_sink(base, rolling=rolling)
            restore(sink, state)
            write(sink, [f"lost-{run}"])
            checkpoint_id += 1
            snapshot(sink, checkpoint_id)  # fails as well
            sink.notify_checkpoint_aborted(checkpoint_id)
            write(sink, [f"lost-{run}-tail"])
        last = make_sink(base, rolling=rolling)
        restore(last, state)
        write(last, ["b"])
        end_input(last)
        assert sorted(committed_lines(base)) == ["a", "b"]
        assert hidden(base) == []

    def test_a_checkpoint_restored_once_can_be_restored_again(self, base):
        """``weir run -s chk-1`` twice: the first restored run committed the checkpoint's
        in-progress data and ran to its end; the second finds it committed and goes on."""
        sink = make_sink(base)
        write(sink, ["a", "b"])  # in progress at checkpoint 1 (the default policy)
        state = snapshot(sink, 1)
        write(sink, ["never checkpointed"])
        first = make_sink(base)
        restore(first, state)
        write(first, ["first"])
        snapshot(first, 2)
        first.notify_checkpoint_complete(2)
        end_input(first)
        assert sorted(committed_lines(base)) == ["a", "b", "first"]
        second = make_sink(base)
        restore(second, state)
        write(second, ["second"])
        end_input(second)
        # The checkpoint's records once; each restored run's own records, once each.
        assert sorted(committed_lines(base)) == ["a", "b", "first", "second"]
        assert hidden(base) == []
        assert len(set(visible(base))) == len(visible(base)) == 3

    def test_a_restore_that_stopped_halfway_through_a_commit_is_finished(self, base):
        sink = make_sink(base)
        write(sink, ["a"])
        state = snapshot(sink, 1)
        fs, root = fsspec.core.url_to_fs(base)
        (temp,) = [p for p in fs.find(root) if ".inprogress." in p]
        # The in-progress file was committed, but the process died before deleting it.
        directory, _, name = temp.rpartition("/")
        fs.pipe_file(f"{directory}/{name[1:].partition('.inprogress.')[0]}", b"a\n")
        restored = make_sink(base)
        restore(restored, state)
        end_input(restored)
        assert committed_lines(base) == ["a"]
        assert hidden(base) == []

    def test_an_older_checkpoint_than_the_one_already_restored_is_refused(self, base):
        sink = make_sink(base)
        write(sink, ["a"])
        older = snapshot(sink, 1)
        write(sink, ["b"])  # the same in-progress file, longer at checkpoint 2
        newer = snapshot(sink, 2)
        restore(make_sink(base), newer)
        assert committed_lines(base) == ["a", "b"]
        with pytest.raises(CheckpointError, match="by a restore of another checkpoint"):
            restore(make_sink(base), older)
        assert committed_lines(base) == ["a", "b"]

    def test_restore_commits_pending_files_idempotently(self, base):
        sink = make_sink(base, rolling=RollingPolicy.on_checkpoint_rolling_policy())
        write(sink, ["a"])
        state = snapshot(sink, 1)
        sink.notify_checkpoint_complete(1)  # committed before the crash
        restored = make_sink(base)
        restore(restored, state)  # commits again: a no-op
        end_input(restored)
        assert committed_lines(base) == ["a"]

    def test_restore_with_a_pending_file_gone_and_never_committed_fails(self, base):
        sink = make_sink(base, rolling=RollingPolicy.on_checkpoint_rolling_policy())
        write(sink, ["a"])
        state = snapshot(sink, 1)
        fs, root = fsspec.core.url_to_fs(base)
        for path in fs.find(root):
            fs.rm(path)
        with pytest.raises(CheckpointError, match="lost data"):
            restore(make_sink(base), state)

    def test_the_sink_pickles_without_open_files(self, base):
        sink = make_sink(base, rolling=RollingPolicy.on_checkpoint_rolling_policy())
        write(sink, ["a"])
        copy = pickle.loads(pickle.dumps(sink))
        assert copy._writer is None


class TestRollingAndNames:
    def test_rolls_by_size(self, base):
        sink = make_sink(base, rolling=RollingPolicy.default_rolling_policy(part_size=8))
        write(sink, ["0123456789", "x", "y"])  # 11 bytes > 8: the next record rolls
        end_input(sink)
        fs, root = fsspec.core.url_to_fs(base)
        contents = sorted(fs.cat_file(f"{root}/{n}").decode() for n in visible(base))
        assert contents == ["0123456789\n", "x\ny\n"]

    def test_rolls_on_rollover_and_inactivity_with_a_fake_clock(self, base):
        clock = FakeClock()
        sink = make_sink(
            base,
            clock,
            check_interval=10,
            rolling=RollingPolicy.default_rolling_policy(
                rollover_interval=1000, inactivity_interval=300
            ),
        )
        write(sink, ["a"])
        clock.now += 299
        write(sink, ["b"])  # still active: same file
        clock.now += 300
        write(sink, ["c"])  # inactive for 300 ms: rolled first, "c" opens a new file
        clock.now += 100
        snapshot(sink, 1)
        sink.notify_checkpoint_complete(1)
        assert committed_lines(base) == ["a", "b"]
        clock.now += 1000  # older than the rollover interval: rolled at the checkpoint
        snapshot(sink, 2)
        sink.notify_checkpoint_complete(2)
        assert sorted(committed_lines(base)) == ["a", "b", "c"]

    def test_output_file_config_names(self, base):
        config = OutputFileConfig.builder().with_part_prefix("pre").with_part_suffix(".txt").build()
        sink = make_sink(base, config=config, rolling=RollingPolicy.on_checkpoint_rolling_policy())
        write(sink, ["a"])
        snapshot(sink, 1)
        in_flight = hidden(base)
        write(sink, ["b"])
        snapshot(sink, 2)
        sink.notify_checkpoint_complete(2)
        uuid = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
        assert re.fullmatch(rf"\.pre-{uuid}-0\.txt\.inprogress\.{uuid}", in_flight[0])
        names = visible(base)
        assert [re.fullmatch(rf"pre-({uuid})-(\d+)\.txt", n) is not None for n in names] == [
            True,
            True,
        ]
        assert sorted(n.rsplit("-", 1)[1] for n in names) == ["0.txt", "1.txt"]
        assert config.get_part_prefix() == "pre" and config.get_part_suffix() == ".txt"

    def test_default_bucket_assigner_is_hourly_date_time(self, base):
        clock = FakeClock(1_700_000_000_000)  # 2023-11-14 22:13:20 UTC
        sink = FileSink.for_row_format(base, Encoder.simple_string_encoder()).build()
        sink._clock = clock
        assert (
            BucketAssigner.date_time_bucket_assigner(timezone_id="UTC").get_bucket_id(
                "x", BucketAssigner.Context(clock.now)
            )
            == "2023-11-14--22"
        )
        utc = (
            FileSink.for_row_format(base, Encoder.simple_string_encoder())
            .with_bucket_assigner(BucketAssigner.date_time_bucket_assigner("yyyy/MM/dd", "UTC"))
            .build()
        )
        utc._clock = clock
        initialized(utc)
        write(utc, ["a"])
        end_input(utc)
        assert [n.rpartition("/")[0] for n in visible(base)] == ["2023/11/14"]

    def test_java_patterns(self):
        assert java_pattern_to_strftime("yyyy-MM-dd--HH") == "%Y-%m-%d--%H"
        assert java_pattern_to_strftime("'day='yyyyMMdd") == "day=%Y%m%d"
        with pytest.raises(ValueError, match="not supported"):
            java_pattern_to_strftime("yyyy-QQ")

    def test_custom_bucket_assigner(self, base):
        class ByParity(BucketAssigner):
            def get_bucket_id(self, element, context):
                return "even" if element % 2 == 0 else "odd"

        sink = make_sink(base, assigner=ByParity())
        write(sink, range(5))
        end_input(sink)
        fs, root = fsspec.core.url_to_fs(base)
        by_bucket = {
            n.split("/")[0]: fs.cat_file(f"{root}/{n}").decode().split() for n in visible(base)
        }
        assert by_bucket == {"even": ["0", "2", "4"], "odd": ["1", "3"]}

    def test_bad_policy_arguments(self):
        with pytest.raises(ValueError, match="part_size must be positive"):
            RollingPolicy.default_rolling_policy(part_size=0)
