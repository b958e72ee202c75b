"""The committed generated gRPC modules match the .proto files (run `make proto`)."""

from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[3]


def test_generated_modules_are_up_to_date(tmp_path):
    (tmp_path / "proto").mkdir()
    protos = sorted((ROOT / "proto").glob("*.proto"))
    for proto in protos:
        shutil.copy(proto, tmp_path / "proto" / proto.name)
    subprocess.run(
        [sys.executable, "-m", "grpc_tools.protoc", "-I.", "--python_out=.", "--pyi_out=.",
         "--grpc_python_out=.", *[f"proto/{p.name}" for p in protos]],
        cwd=tmp_path, check=True)
    generated = sorted(p.name for p in (tmp_path / "proto").iterdir() if "_pb2" in p.name)
    committed = sorted(p.name for p in (ROOT / "proto").iterdir() if "_pb2" in p.name)
    assert generated == committed, "generated module set differs: run `make proto`"
    for name in generated:
        assert (tmp_path / "proto" / name).read_bytes() == (ROOT / "proto" / name).read_bytes(), (
            f"proto/{name} is stale: run `make proto`")
