"""The config hash: what identifies a job's training configuration (resume, sweeps).

Keys that change where or how results are reported, not what is trained, are left out,
together with their native mirrors from the key map.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from omegaconf import DictConfig, OmegaConf

from rllm_sweeps.keymap import KEY_MAPPINGS

NOT_HASHED = (
    "hydra",
    "sweep",
    "resources",
    "trainer.logger",
    "trainer.project_name",
    "trainer.experiment_name",
    "trainer.resume_mode",
)


def _not_hashed_paths() -> list[str]:
    natives = [m.native for m in KEY_MAPPINGS if any(_under(m.common, p) for p in NOT_HASHED)]
    return [*NOT_HASHED, *natives]


def _under(key: str, prefix: str) -> bool:
    return key == prefix or key.startswith(prefix + ".")


def _drop(tree: dict[str, Any], path: str) -> None:
    *parents, leaf = path.split(".")
    for part in parents:
        tree = tree.get(part)
        if not isinstance(tree, dict):
            return
    tree.pop(leaf, None)


def config_hash(cfg: DictConfig | dict[str, Any], length: int = 12) -> str:
    plain = OmegaConf.to_container(cfg, resolve=True) if OmegaConf.is_config(cfg) else json.loads(json.dumps(cfg))
    for path in _not_hashed_paths():
        _drop(plain, path)
    canonical = json.dumps(plain, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:length]
