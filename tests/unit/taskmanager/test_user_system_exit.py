"""os._exit in user code on a task thread, per cluster.intercept-user-system-exit."""

from __future__ import annotations

import os
import threading

import pytest

from weir.core.errors import UserSystemExitError
from weir.taskmanager import user_system_exit


class _Exited(BaseException):
    pass


@pytest.fixture
def exits(monkeypatch) -> list[int]:
    """The codes the real os._exit would have been called with (it raises instead)."""
    codes: list[int] = []

    def record(code: int):
        codes.append(code)
        raise _Exited

    monkeypatch.setattr(user_system_exit, "_real_exit", record)
    monkeypatch.setattr(os, "_exit", os._exit)  # restored after the test
    monkeypatch.setattr(user_system_exit, "_mode", user_system_exit._mode)
    return codes


def test_throw_fails_the_task_naming_it_and_the_code(exits):
    user_system_exit.install("THROW")
    with user_system_exit.monitor_user_system_exit("Map (2/4)"):
        with pytest.raises(UserSystemExitError, match=r"task Map \(2/4\) called os._exit\(3\)"):
            os._exit(3)
    assert exits == []


def test_other_threads_exit_as_always(exits):
    user_system_exit.install("THROW")
    with pytest.raises(_Exited):
        os._exit(4)  # not in a task
    errors = []

    def other_thread():
        try:
            os._exit(5)
        except _Exited:
            errors.append("exited")

    with user_system_exit.monitor_user_system_exit("Map (1/1)"):
        thread = threading.Thread(target=other_thread)
        thread.start()
        thread.join()
    assert exits == [4, 5] and errors == ["exited"]


@pytest.mark.parametrize("mode", ["LOG", "DISABLED"])
def test_log_and_disabled_let_the_exit_happen(exits, mode):
    user_system_exit.install(mode)
    with user_system_exit.monitor_user_system_exit("Map (1/1)"), pytest.raises(_Exited):
        os._exit(6)
    assert exits == [6]
