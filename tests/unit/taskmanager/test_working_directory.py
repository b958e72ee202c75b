"""Working directories: locked while their TaskManager lives, removed by the next one to
start once it is gone. A lock taken through another open file of this process stands in
for another process (flock locks belong to the open file, not to the process)."""

from __future__ import annotations

import os
from pathlib import Path

from weir.taskmanager.working_directory import LOCK_FILE, WorkingDirectory, remove_abandoned


def _die(directory: WorkingDirectory) -> None:
    """What SIGKILL does to a TaskManager: its lock goes, its directory stays."""
    os.close(directory._lock_fd)
    directory._lock_fd = -1


def test_a_working_directory_is_named_for_its_task_manager_and_deleted_on_close(
    tmp_path: Path,
) -> None:
    directory = WorkingDirectory.create("0123456789abcdef", str(tmp_path))
    assert Path(directory.path).parent == tmp_path
    assert Path(directory.path).name.startswith("weir-tm-01234567-")
    assert os.listdir(tmp_path) == [Path(directory.path).name]  # no staging name left
    (Path(directory.path) / "job_x").mkdir()
    directory.close()
    directory.close()
    assert os.listdir(tmp_path) == []


def test_only_the_directories_of_ended_task_managers_are_removed(tmp_path: Path) -> None:
    alive = WorkingDirectory.create("aaaaaaaa", str(tmp_path))
    dead = WorkingDirectory.create("bbbbbbbb", str(tmp_path))
    (Path(dead.path) / "job_1" / "weir-rocksdb").mkdir(parents=True)
    (Path(dead.path) / "job_1" / "weir-rocksdb" / "000001.sst").write_bytes(b"x" * 100)
    _die(dead)
    assert remove_abandoned(str(tmp_path)) == [dead.path]
    assert not os.path.exists(dead.path)
    assert os.path.exists(os.path.join(alive.path, LOCK_FILE))
    assert remove_abandoned(str(tmp_path)) == []
    alive.close()


def test_directories_without_a_lock_links_and_other_names_are_left_alone(
    tmp_path: Path,
) -> None:
    unlocked = tmp_path / "weir-tm-cccccccc-old"  # an older layout: no lock file
    unlocked.mkdir()
    (unlocked / "file").write_text("kept")
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / LOCK_FILE).write_text("")
    (target / "precious").write_text("kept")
    (tmp_path / "weir-tm-dddddddd-link").symlink_to(target)
    other = tmp_path / "not-weir"
    other.mkdir()
    (other / LOCK_FILE).write_text("")
    assert remove_abandoned(str(tmp_path)) == []
    assert (unlocked / "file").read_text() == "kept"
    assert (target / "precious").read_text() == "kept"
    assert other.exists()
