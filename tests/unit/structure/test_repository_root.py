"""The repository's top level holds the folders of the design and a few project files;
anything else there (probe output, scratch files) is a mistake about to be committed."""

from __future__ import annotations

import pathlib
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[3]
ALLOWED = {
    # the layout of the design
    "weir",
    "dispatcher",
    "resourcemanager",
    "jobmanager",
    "taskmanager",
    "proto",
    "deploy",
    "tests",
    "benchmarks",
    "examples",
    "docs",
    # project files
    "README.md",
    "Makefile",
    "pyproject.toml",
    ".gitignore",
    ".importlinter",
    ".ci",
    ".git",
}


def _ignored(names: list[str]) -> set[str]:
    """Those of ``names`` that .gitignore covers (venvs, caches, build output)."""
    result = subprocess.run(
        ["git", "check-ignore", "--no-index", *names],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode in (0, 1), result.stderr
    return set(result.stdout.split())


def test_nothing_unexpected_at_the_repository_root():
    entries = sorted(p.name for p in ROOT.iterdir())
    unexpected = [name for name in entries if name not in ALLOWED]
    stray = sorted(set(unexpected) - _ignored(unexpected)) if unexpected else []
    assert not stray, (
        f"unexpected files at the repository root: {stray}; move them into the folder they "
        "belong to, delete them, or list build output in .gitignore"
    )
