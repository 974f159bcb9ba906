"""The package reads its own files through importlib.resources (config/paths.py), never by a path
relative to a checkout: an installed wheel has no checkout (tests/test_installed_package.py runs one)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("rllm_sweeps", "launchers", "hydra_plugins")
# A path computed from a module's own file (up into a checkout), or one of the checkout's files by name.
CHECKOUT_PATH = re.compile(
    r"(Path|dirname|abspath|realpath|getfile)\(__file__\)|__spec__\.origin|REPO_ROOT|checkout_file"
    r"|[\"']\.\./|Path\([\"'](conf|train\.py)[\"']\)"
)


def test_no_file_of_the_package_reads_a_path_relative_to_a_checkout():
    found = [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for package in PACKAGES
        for path in sorted((REPO / package).rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if CHECKOUT_PATH.search(line)
    ]
    assert not found, "read the package's files with importlib.resources (config/paths.py):\n" + "\n".join(found)


def test_the_checkouts_train_py_is_three_lines_calling_the_packages_training_app():
    lines = [line for line in (REPO / "train.py").read_text().splitlines() if line.strip()]
    assert len(lines) == 3 and lines[0].startswith("from rllm_sweeps.train import main")
    assert lines[-1].strip() == "main()"
