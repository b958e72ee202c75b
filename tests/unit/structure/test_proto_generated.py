"""The committed generated gRPC modules match the .proto files (run `make proto`)."""

from __future__ import annotations

import pathlib
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[3]


def test_generated_modules_are_up_to_date(tmp_path):
    subprocess.run(
        ["make", "-s", "-C", str(ROOT), "proto", f"PROTO_OUT={tmp_path}"],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    generated = sorted(p.name for p in tmp_path.iterdir() if "_pb2" in p.name)
    committed = sorted(p.name for p in (ROOT / "proto").iterdir() if "_pb2" in p.name)
    assert generated, "make proto generated nothing"
    assert generated == committed, "generated module set differs: run `make proto`"
    for name in generated:
        assert (tmp_path / name).read_bytes() == (ROOT / "proto" / name).read_bytes(), (
            f"proto/{name} is stale: run `make proto`"
        )
