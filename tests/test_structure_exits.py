"""The process ends in one place per program: code below an entry point raises `Stop(code, message)`
(rllm_sweeps/stop.py) and only the entry point turns it into the exit, so that the message and the
exit code users see are decided where the program starts, and every caller can catch a refusal."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCANNED = ("rllm_sweeps", "hydra_plugins")
# Where the process may end, each with why.
EXIT_HOMES = {
    "hydra_plugins/rllm_sweeps_sweeper/sweeper.py": "the sweeper's entry point (Hydra calls its sweep())",
    "rllm_sweeps/train.py": "the training app's entry point (train.py, python -m rllm_sweeps, rllm-sweeps train)",
    "rllm_sweeps/runtime/signals.py": "a termination signal as an exception: uncaught in any process it must "
    "exit 128 + signum, as the signal itself would, also where no entry point of ours runs (Ray's, a test's)",
}


def exits_outside_main_blocks(source: str) -> list[int]:
    """Lines that name SystemExit or call sys.exit, outside `if __name__ == "__main__":` (a
    module's own script entry point)."""
    tree = ast.parse(source)
    main_blocks = [
        node
        for node in tree.body
        if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test) and "__name__" in ast.unparse(node.test)
    ]
    inside = {id(n) for block in main_blocks for n in ast.walk(block)}
    found = []
    for node in ast.walk(tree):
        if id(node) in inside:
            continue
        if isinstance(node, ast.Name) and node.id == "SystemExit":
            found.append(node.lineno)
        elif isinstance(node, ast.Attribute) and node.attr == "exit" and ast.unparse(node.value) == "sys":
            found.append(node.lineno)
    return sorted(found)


def test_only_the_entry_points_end_the_process():
    offenders = []
    for package in SCANNED:
        for path in sorted((REPO / package).rglob("*.py")):
            where = str(path.relative_to(REPO))
            if where in EXIT_HOMES:
                continue
            offenders += [f"{where}:{line}" for line in exits_outside_main_blocks(path.read_text())]
    assert offenders == [], f"raise rllm_sweeps.stop.Stop(code, message) instead: {offenders}"


def test_the_exit_finder_finds_exits_but_not_a_main_block():
    source = (
        "import sys\n"
        "def f():\n"
        "    raise SystemExit(2)\n"
        "def g():\n"
        "    sys.exit(1)\n"
        "if __name__ == '__main__':\n"
        "    sys.exit(main())\n"
    )
    assert exits_outside_main_blocks(source) == [3, 5]


def test_every_exit_home_exists():
    assert all((REPO / where).is_file() for where in EXIT_HOMES)
