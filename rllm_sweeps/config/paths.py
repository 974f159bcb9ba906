"""Where the repository checkout is: rllm_sweeps runs from one (`pip install -e .` in it).

conf/ (the config tree) and train.py (the Hydra app every job runs) are files of the checkout,
beside the package, and are not installed with it: a non-editable install has neither.
"""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]  # rllm_sweeps/config/paths.py -> the checkout


def checkout_file(path: Path) -> Path:
    """`path`, a file or folder of the checkout (under REPO_ROOT), or a clear error when it is not there."""
    if not path.exists():
        raise FileNotFoundError(
            f"{path} is not there: rllm_sweeps runs from a checkout of its repository, installed with "
            "`pip install -e .` (conf/ and train.py are files of the checkout, not of the installed package)"
        )
    return path


def is_sweep_file_path(name: str) -> bool:
    """`+sweep=X` names a file by path (X ends in .yaml or .yml), not the option conf/sweep/X."""
    return name.endswith((".yaml", ".yml"))
