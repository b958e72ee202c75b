"""A job's Python dependencies reach its functions on the TaskManagers, as in PyFlink: an
archive extracted in the job's working directory, requirements installed with pip from a
shipped cache directory; requirements pip cannot install fail the job saying so, and the
cluster runs the next job."""

from __future__ import annotations

import base64
import hashlib
import uuid
import zipfile

import pytest

from weir.common import Types
from weir.core.errors import JobExecutionError
from weir.datastream import MapFunction, StreamExecutionEnvironment

pytestmark = pytest.mark.spark


def wheel(directory, name: str, module_source: str):
    """A pure-Python wheel of one module, as `pip wheel` would build it."""
    dist = f"{name}-1.0"
    files = {
        f"{name}.py": module_source,
        f"{dist}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n",
        f"{dist}.dist-info/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{path},sha256={digest.decode()},{len(text.encode())}")
    record.append(f"{dist}.dist-info/RECORD,,")
    files[f"{dist}.dist-info/RECORD"] = "\n".join(record) + "\n"
    path = directory / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for name_in_wheel, text in files.items():
            archive.writestr(name_in_wheel, text)
    return path


class AddFromBoth(MapFunction):
    def __init__(self, module: str) -> None:
        self.module = module

    def map(self, value):
        import importlib

        plus = importlib.import_module(self.module).plus
        with open("data/offset.txt") as f:  # relative: the job's working directory
            return plus(value, int(f.read()))


def test_archives_and_requirements_reach_the_functions(cluster, tmp_path):
    module = f"weir_test_plus_{uuid.uuid4().hex[:8]}"  # importable nowhere else
    cache = tmp_path / "cache"
    cache.mkdir()
    wheel(cache, module, "def plus(a, b):\n    return a + b\n")
    requirements = tmp_path / "requirements.txt"
    requirements.write_text(f"{module}==1.0\n")
    with zipfile.ZipFile(tmp_path / "data.zip", "w") as archive:
        archive.writestr("offset.txt", "100")

    env = StreamExecutionEnvironment.get_execution_environment().set_parallelism(2)
    env.add_python_archive(str(tmp_path / "data.zip"), "data")
    env.set_python_requirements(str(requirements), str(cache))
    ds = env.from_collection([1, 2, 3, 4], type_info=Types.INT()).rebalance()
    with ds.map(AddFromBoth(module), Types.INT()).execute_and_collect() as results:
        assert sorted(results) == [101, 102, 103, 104]


def test_requirements_pip_cannot_install_fail_the_job_naming_them(cluster, tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("weir-no-such-package==9.9\n")
    env = StreamExecutionEnvironment.get_execution_environment().set_parallelism(1)
    env.set_python_requirements(str(requirements), str(cache))
    env.from_collection([1], type_info=Types.INT()).map(lambda x: x).print()
    with pytest.raises(JobExecutionError) as failure:
        env.execute("unavailable requirements")
    message = str(failure.value)
    assert "python.requirements could not be installed" in message
    assert "weir-no-such-package==9.9" in message
    assert "pip download" in message

    after = StreamExecutionEnvironment.get_execution_environment().set_parallelism(1)
    with after.from_collection([7], type_info=Types.INT()).execute_and_collect() as results:
        assert list(results) == [7]
