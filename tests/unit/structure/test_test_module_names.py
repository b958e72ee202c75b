"""`make test` collects every tier but the unit one in a single pytest run, where test
modules are imported by their file name alone (there are no packages under tests/): two
files of the same name anywhere outside tests/unit stop the whole run at collection."""

from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parents[2]


def test_no_two_test_modules_outside_the_unit_tier_share_a_file_name():
    by_name = defaultdict(list)
    for path in TESTS.rglob("*.py"):
        relative = path.relative_to(TESTS)
        if relative.parts[0] == "unit" or path.name in ("conftest.py", "__init__.py"):
            continue
        by_name[path.name].append(str(relative))
    clashes = {name: paths for name, paths in by_name.items() if len(paths) > 1}
    assert clashes == {}, f"rename one of each: {clashes}"
