"""The import rules of DESIGN.md §1, checked on the source (as Ray's module-structure test)."""

from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
SERVICES = ("dispatcher", "resourcemanager", "jobmanager", "taskmanager")
# The composition roots wire services together; nothing else may import two of them.
COMPOSITION_ROOTS = {"weir/client/mini_cluster.py", "weir/client/master_process.py",
                     "weir/client/cluster_components.py"}


def _imports(path: pathlib.Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def _top(modules: set[str]) -> set[str]:
    return {m.split(".")[0] for m in modules}


def _py_files(package: str) -> list[pathlib.Path]:
    return [p for p in (ROOT / package).rglob("*.py") if "_pb2" not in p.name]


@pytest.mark.parametrize("package", ["weir/datastream", "weir/common", "weir/graph", "weir/core"])
def test_api_and_core_import_no_service(package):
    for path in _py_files(package):
        bad = _top(_imports(path)) & set(SERVICES)
        assert not bad, f"{path.relative_to(ROOT)} imports {bad}"


@pytest.mark.parametrize("package", ["weir/datastream", "weir/common", "weir/graph"])
def test_api_knows_nothing_of_grpc_spark_or_zookeeper(package):
    for path in _py_files(package):
        bad = _top(_imports(path)) & {"grpc", "pyspark", "kazoo", "proto"}
        assert not bad, f"{path.relative_to(ROOT)} imports {bad}"


@pytest.mark.parametrize("service", SERVICES)
def test_services_never_import_each_other(service):
    others = set(SERVICES) - {service}
    for path in _py_files(service):
        imported = _imports(path)
        bad = _top(imported) & (others | {"weir"}) - {"weir"}
        assert not bad, f"{path.relative_to(ROOT)} imports {bad}"
        weir_parts = {m for m in imported if m.startswith("weir.")}
        outside_core = {m for m in weir_parts if not m.startswith("weir.core")}
        assert not outside_core, f"{path.relative_to(ROOT)} imports {outside_core}: only weir.core"


def test_only_composition_roots_import_services_from_the_client():
    for path in _py_files("weir/client"):
        rel = str(path.relative_to(ROOT))
        services = _top(_imports(path)) & set(SERVICES)
        if rel not in COMPOSITION_ROOTS:
            assert not services, f"{rel} imports {services}; only composition roots may"
