"""Strict validation of Kubernetes manifests against the API schemas that
kubernetes-validate bundles (no API server is involved): the three newest minor versions
it has, strict mode (an unknown field anywhere is an error, as the API server's strict
field validation makes it), and a kind with no schema is an error too, not a warning.

A ConfigMap that carries the TaskManager pod template has that file validated as the Pod
it is."""

from __future__ import annotations

from typing import Any

import kubernetes_validate
import yaml
from kubernetes_validate.utils import all_versions
from packaging.version import Version

POD_TEMPLATE_FILE = "taskmanager-pod-template.yaml"


def newest_versions(count: int = 3) -> list[str]:
    """The ``count`` newest Kubernetes minor versions whose schemas are bundled."""
    minors = sorted({".".join(v.split(".")[:2]) for v in all_versions()}, key=Version)
    return minors[-count:]


KUBERNETES_VERSIONS = newest_versions()


def _describe(doc: dict[str, Any]) -> str:
    return f"{doc.get('kind')}/{(doc.get('metadata') or {}).get('name')}"


def validate_strictly(doc: dict[str, Any], version: str) -> None:
    """Raise AssertionError naming the object, the version and the offending field."""
    try:
        kubernetes_validate.validate(doc, version, strict=True)
    except kubernetes_validate.ValidationError as exc:
        path = ".".join(str(p) for p in exc.path)
        msg = f"{_describe(doc)} is invalid for Kubernetes {version} at {path}: {exc.message}"
        raise AssertionError(msg) from None
    except kubernetes_validate.SchemaNotFoundError as exc:
        raise AssertionError(exc.message) from None


def validate_all(docs: list[dict[str, Any]]) -> list[str]:
    """Validate every document (and every embedded pod template) against every version in
    ``KUBERNETES_VERSIONS``; returns what was validated, as ``Kind/name``."""
    assert docs, "no manifests to validate"
    checked = []
    for doc in docs:
        embedded = []
        if doc.get("kind") == "ConfigMap" and POD_TEMPLATE_FILE in (doc.get("data") or {}):
            embedded.append(yaml.safe_load(doc["data"][POD_TEMPLATE_FILE]))
        for version in KUBERNETES_VERSIONS:
            validate_strictly(doc, version)
            for pod in embedded:
                validate_strictly(pod, version)
        checked.append(_describe(doc))
        checked += [f"{_describe(doc)}/{POD_TEMPLATE_FILE}" for _ in embedded]
    return checked
