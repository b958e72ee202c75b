"""The built-in Count over batches of columns on tumbling event-time windows on the
rocksdb backend (windows in columnar blocks, ``weir.taskmanager.operators.window_blocks``)
with incremental checkpoints: a savepoint taken by stop at parallelism 2 holds the open
windows key by key, and resumes at parallelism 3, where a failure injected once
restarts the job from an incremental checkpoint of the blocks; the counts are exactly
those of an uninterrupted run, through an exactly-once file sink."""

from __future__ import annotations

import re
import time

import pytest
from test_columnar_window_rescale import DEADLINE_S, JOB, _expected, _lines

from weir.client import cli
from weir.client.dispatcher_client import DispatcherGateway
from weir.core.job_status import JobStatus
from weir.state import read_savepoint

pytestmark = pytest.mark.spark

# The same job on the rocksdb backend, incremental checkpoints; in the "fail" run, the
# source fails once (the marker file says it did) once 20,000 of its 30,000 records are
# out, which is after checkpoints of the resumed run completed (its batches are
# throttled as the "slow" run's are).
ROCKSDB_JOB = (
    JOB.replace(
        "from weir.datastream import StreamExecutionEnvironment",
        "import os\nfrom weir.datastream import EmbeddedRocksDBStateBackend, "
        "StreamExecutionEnvironment",
    )
    .replace(
        "env.enable_checkpointing(300)",
        "env.set_state_backend(EmbeddedRocksDBStateBackend(True))\nenv.enable_checkpointing(300)",
    )
    .replace(
        'if speed == "slow":',
        'if speed == "fail" and self.next >= 20_000 and not os.path.exists(out + ".failed"):\n'
        '            open(out + ".failed", "w").close()\n'
        '            raise RuntimeError("injected failure")\n'
        '        if speed in ("slow", "fail"):',
    )
)


@pytest.mark.long  # two runs of a throttled job, a restart between
def test_rocksdb_blocks_resume_from_a_savepoint_and_a_failure_exactly(cluster, tmp_path, capsys):
    assert ROCKSDB_JOB.count("EmbeddedRocksDBStateBackend") == 2
    assert "injected failure" in ROCKSDB_JOB
    script = tmp_path / "rocksdb_counts.py"
    script.write_text(ROCKSDB_JOB)
    checkpoints = f"file://{tmp_path / 'checkpoints'}"
    first, resumed = tmp_path / "out-first", tmp_path / "out-resumed"
    args = [str(first), checkpoints, "slow"]
    assert cli.main(["run", "-d", "-p", "2", "-m", cluster.address, str(script), *args]) == 0
    match = re.search(r"JobID ([0-9a-f]{32})", capsys.readouterr().out)
    assert match, "the CLI did not print the job id"
    job_id = match.group(1)
    with DispatcherGateway(cluster.address) as gateway:
        deadline = time.monotonic() + DEADLINE_S
        while gateway.checkpoint_statistics(job_id).num_completed < 2:
            assert time.monotonic() < deadline, "no checkpoint completed"
            time.sleep(0.1)  # polling interval
    assert cli.main(["stop", "-m", cluster.address, "-p", str(tmp_path / "sp"), job_id]) == 0
    match = re.search(r"Savepoint completed\. Path: (\S+)", capsys.readouterr().out)
    assert match
    savepoint = match.group(1)
    with DispatcherGateway(cluster.address) as gateway:
        assert gateway.wait_for_result(job_id, DEADLINE_S * 1000).status == JobStatus.FINISHED.name

    # The savepoint holds the open windows key by key, as the per-key path writes them.
    sp = read_savepoint(savepoint)
    (windows,) = (op for op in sp.operators if op.uid == "windows")
    open_windows = list(sp.keyed_state("windows", "_weir_window_contents"))
    assert open_windows, "the savepoint holds no open window"
    names = {
        meta.name
        for subtask in sp.metadata.operator_states[windows.operator_id].subtask_states.values()
        for handle in subtask.managed_keyed_state
        for meta in handle.state_meta
    }
    assert not any(name.endswith("/blocks") for name in names)

    # Two subtasks' key groups, read by three, which fail once and recover.
    args = [str(resumed), checkpoints, "fail"]
    run = ["run", "-p", "3", "-m", cluster.address, "-s", savepoint, str(script), *args]
    assert cli.main(run) == 0
    assert (tmp_path / "out-resumed.failed").exists(), "the failure was not injected"
    assert _lines(first, resumed) == _expected()
