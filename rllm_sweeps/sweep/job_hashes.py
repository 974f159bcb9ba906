"""A job's two hashes: its config's, and its point's (the config without the seed, the same for
every seed of a point). Both are jobhash.config_hash; a job composed the fast way is hashed
through its base's HashTemplate, which encodes only the values the job changed."""

from __future__ import annotations

import functools
from typing import Any

from rllm_sweeps.config.composed_base import Base
from rllm_sweeps.config.job_composer import JobConfig
from rllm_sweeps.jobhash import config_hash
from rllm_sweeps.keymap import KEY_MAPPINGS


@functools.cache
def seed_paths(seed_key: str) -> tuple[str, ...]:
    """The seed and its native mirrors: what a job's config has and its point's does not."""
    return (seed_key, *(m.native for m in KEY_MAPPINGS if m.common == seed_key))


def strip_seed(plain: dict[str, Any], seed_key: str) -> dict[str, Any]:
    """The config without its seed (nor the seed's native mirrors): what a point is."""
    out = dict(plain)
    for path in seed_paths(seed_key):
        parts = path.split(".")
        node: Any = out
        for part in parts[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                node = None
                break
            node[part] = node = dict(child)
        if isinstance(node, dict):
            node.pop(parts[-1], None)
    return out


def job_hashes(
    plain: dict[str, Any], config: JobConfig, base: Base | None, seed_key: str, point: bool
) -> tuple[str, str]:
    """The job's config hash and (`point`) its point's: the config's without the seed ("" if not asked).
    A job composed the fast way is hashed through its base's templates (the same hashes, faster)."""
    changed = config.changed
    if base is not None and changed is not None:
        job_t = base.hash_template(changed)
        point_t = base.hash_template(changed, seed_paths(seed_key)) if point else None
        try:
            if job_t is not None and (point_t is not None or not point):
                return job_t.hash(plain), point_t.hash(plain) if point_t is not None else ""
        except (KeyError, TypeError, IndexError):
            pass  # a changed path the config does not have: hashed in full below
    return config_hash(plain), config_hash(strip_seed(plain, seed_key)) if point else ""
