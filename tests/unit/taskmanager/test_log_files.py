"""A TaskManager's taskmanager.log and taskmanager.out: where they are, what goes in,
and that they never grow past their cap."""

from __future__ import annotations

import logging
import sys
import threading

from weir.taskmanager.log_files import RollingTextFile, TaskManagerLogFiles
from weir.taskmanager.task_stdout import task_stdout


def _on_a_thread(function) -> None:
    thread = threading.Thread(target=function)
    thread.start()
    thread.join()


class TestRollingTextFile:
    def test_rolls_over_before_the_cap_and_keeps_only_the_newest_files(self, tmp_path):
        path = tmp_path / "taskmanager.out"
        out = RollingTextFile(str(path), max_bytes=1000, backups=2)
        lines = [f"line {i:05d} {'x' * 40}\n" for i in range(200)]  # ~10 kB
        for line in lines:
            out.write(line)
        out.close()
        files = sorted(p.name for p in tmp_path.iterdir())
        assert files == ["taskmanager.out", "taskmanager.out.1", "taskmanager.out.2"]
        assert all(p.stat().st_size <= 1000 for p in tmp_path.iterdir())
        kept = (
            "".join((tmp_path / name).read_text() for name in reversed(files[1:]))
            + path.read_text()
        )
        assert kept.endswith(lines[-1]) and lines[0] not in kept
        assert kept == "".join(lines[-kept.count("\n") :])  # the newest lines, in order

    def test_appends_to_what_is_there(self, tmp_path):
        path = tmp_path / "taskmanager.out"
        path.write_text("before\n")
        out = RollingTextFile(str(path), max_bytes=1000, backups=1)
        out.write("after\n")
        out.close()
        assert path.read_text() == "before\nafter\n"


def test_a_task_manager_logs_and_prints_into_its_own_files(tmp_path, capsys):
    config = {"env.log.dir": str(tmp_path), "env.log.max": "1", "env.log.max-file-size": "1 mb"}
    target = tmp_path / "client.out"
    with TaskManagerLogFiles(config, "tm1") as files:
        assert files.directory == str(tmp_path / "taskmanager-tm1")
        logging.getLogger("weir.taskmanager.probe").info("registered with the ResourceManager")
        _on_a_thread(lambda: print("printed by a job without a client"))
        _on_a_thread(lambda: sys.stderr.write("written to stderr\n"))

        def attached_task():
            with task_stdout(str(target)):
                print("printed to the client")

        _on_a_thread(attached_task)
    print("printed after the TaskManager stopped")
    directory = tmp_path / "taskmanager-tm1"
    log = (directory / "taskmanager.log").read_text()
    out = (directory / "taskmanager.out").read_text()
    assert "INFO" in log and "registered with the ResourceManager" in log
    assert out == "printed by a job without a client\nwritten to stderr\n"
    assert target.read_text() == "printed to the client\n"
    captured = capsys.readouterr()
    assert captured.out == "printed after the TaskManager stopped\n"
    assert "job without a client" not in captured.out + captured.err


def test_without_a_log_directory_nothing_changes(tmp_path, capsys):
    with TaskManagerLogFiles({}, "tm1") as files:
        assert files.directory == ""
        print("to the process's stdout")
    assert capsys.readouterr().out == "to the process's stdout\n"
    assert list(tmp_path.iterdir()) == []
