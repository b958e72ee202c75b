"""A job's working directory and user modules on a TaskManager, given back when it leaves."""

from __future__ import annotations

import importlib
import os
import sys
import threading

import pytest

from weir.core.errors import InvalidJobIdError
from weir.taskmanager.job_resources import JobResourceTable, job_task_thread

JOB_A = "a" * 32
JOB_B = "b" * 32

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="CLONE_FS")


def _in_thread(function):
    """Run ``function`` on a thread of its own (as a task runs) and return its result."""
    result = []
    thread = threading.Thread(target=lambda: result.append(function()))
    thread.start()
    thread.join()
    return result[0]


def test_a_task_thread_works_in_its_jobs_directory_and_the_process_does_not(tmp_path):
    table = JobResourceTable(str(tmp_path))
    process_dir = os.getcwd()

    def task(job_id):
        def run():
            with job_task_thread(table.acquire(job_id)) as resources:
                with open("scratch.txt", "w") as out:
                    out.write(job_id)
                return resources.working_dir, os.getcwd()

        return run

    (dir_a, cwd_a), (dir_b, cwd_b) = _in_thread(task(JOB_A)), _in_thread(task(JOB_B))
    assert (cwd_a, cwd_b) == (dir_a, dir_b)
    assert os.path.basename(dir_a).startswith(f"job_{JOB_A}_")
    assert os.path.dirname(dir_a) == str(tmp_path)
    assert (tmp_path / dir_a / "scratch.txt").read_text() == JOB_A
    assert (tmp_path / dir_b / "scratch.txt").read_text() == JOB_B
    assert os.getcwd() == process_dir


def test_tasks_of_one_job_share_its_directory(tmp_path):
    table = JobResourceTable(str(tmp_path))

    def task():
        with job_task_thread(table.acquire(JOB_A)):
            return os.getcwd()

    assert _in_thread(task) == _in_thread(task)


def test_release_deletes_the_directory_and_unloads_the_user_modules_it_imported(tmp_path):
    modules = tmp_path / "modules"
    modules.mkdir()
    (modules / "weir_unit_probe.py").write_text("STATE = []\n")
    sys.path.insert(0, str(modules))
    table = JobResourceTable(str(tmp_path))
    try:

        def task():
            with job_task_thread(table.acquire(JOB_A)) as resources:
                importlib.import_module("weir_unit_probe").STATE.append(1)
                importlib.import_module("colorsys")  # the standard library stays loaded
                return resources

        resources = _in_thread(task)
        assert {"weir_unit_probe", "colorsys"} <= resources.imported
        assert table.detach(JOB_A) is resources and table.jobs() == []
        JobResourceTable.release(resources)
        assert not os.path.exists(resources.working_dir)
        assert "weir_unit_probe" not in sys.modules
        assert "colorsys" in sys.modules
        assert importlib.import_module("weir_unit_probe").STATE == []  # afresh
    finally:
        sys.path.remove(str(modules))
        sys.modules.pop("weir_unit_probe", None)


def test_imports_outside_task_threads_belong_to_no_job(tmp_path):
    table = JobResourceTable(str(tmp_path))

    def task():
        with job_task_thread(table.acquire(JOB_A)) as resources:
            return resources

    resources = _in_thread(task)
    sys.modules.pop("tabnanny", None)
    importlib.import_module("tabnanny")  # on this thread, which runs no task
    assert "tabnanny" not in resources.imported


def test_a_job_id_that_is_not_one_names_no_directory(tmp_path):
    table = JobResourceTable(str(tmp_path))
    with pytest.raises(InvalidJobIdError):
        table.acquire("../../x")
    assert list(tmp_path.iterdir()) == []
