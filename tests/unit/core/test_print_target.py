"""A print target is followed only on the client's own host."""

from __future__ import annotations

from pathlib import Path

from weir.core.print_target import encode_print_target, host_identity, local_print_target


def test_a_target_of_this_host_is_followed(tmp_path: Path) -> None:
    target = str(tmp_path / "stdout")
    Path(target).touch()
    assert host_identity()
    assert local_print_target(encode_print_target(target)) == target


def test_a_target_of_a_client_gone_is_not() -> None:
    assert local_print_target(encode_print_target("/proc/0/fd/1")) is None


def test_a_target_of_another_host_or_without_a_host_is_not() -> None:
    assert local_print_target("another-boot:4026531840|/proc/1/fd/1") is None
    assert local_print_target("/proc/1/fd/1") is None
    assert local_print_target(None) is None
