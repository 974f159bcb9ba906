"""Where the package's own files are: its config tree, found through importlib.resources.

The checkout keeps the config tree as its top-level conf/; an installed wheel carries it as
rllm_sweeps/conf/ (pyproject.toml's package-dir), and an editable install maps the package
rllm_sweeps.conf onto conf/. Either way it is the package `rllm_sweeps.conf`, on Hydra's search path
as pkg://rllm_sweeps.conf: nothing here is a path relative to a checkout, so rllm-sweeps runs the
same from its clone and from a user's own repository.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

CONF_PACKAGE = "rllm_sweeps.conf"
CONF_SEARCH_PATH = f"pkg://{CONF_PACKAGE}"  # the primary config's place on Hydra's search path
# A directory on disk (OmegaConf.load and Hydra's own readers take files): an installed or editable
# package is one; a zipped install is not supported.
try:
    CONF_DIR = Path(str(resources.files(CONF_PACKAGE)))
except ModuleNotFoundError as err:  # an editable install older than the mapping of conf/ onto the package
    raise ModuleNotFoundError(
        f"{CONF_PACKAGE} (the config tree) is not installed: install rllm-sweeps again "
        "(`make setup`, or `pip install -e .` in the checkout)"
    ) from err


def is_sweep_file_path(name: str) -> bool:
    """`+sweep=X` names a file by path (X ends in .yaml or .yml), not the option conf/sweep/X."""
    return name.endswith((".yaml", ".yml"))


def package_dir(search_path_entry: str) -> Path | None:
    """The directory of a `pkg://` search-path entry's package (rllm_sweeps.conf: CONF_DIR), or None
    when it cannot be imported."""
    name = search_path_entry.removeprefix("pkg://").replace("/", ".")
    try:
        path = Path(str(resources.files(name)))
    except (ModuleNotFoundError, ValueError, TypeError):
        return None
    return path if path.is_dir() else None
