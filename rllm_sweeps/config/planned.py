"""A sweep's job was validated by the sweeper: its pre-flight check need not compose and validate
the same overrides again (about 0.5-1.5 s of every job's start).

The sweeper validates each job's whole config when it plans it (config/job_composer.py, equal
to load_config) and hands the job, beside its command, the digest of the overrides it
validated (its launch record's `validated`, records/launch.py). A job whose own overrides have
that digest skips the check; any other job, a command typed by hand with the variable left in the
shell included, is checked as always.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable

from rllm_sweeps.override_text import override_key


def is_hydra_override(override: str) -> bool:
    """Hydra's own settings (hydra.run.dir=..., hydra/launcher=...): not part of the job's config."""
    return override_key(override).startswith(("hydra.", "hydra/"))


def job_overrides(overrides: Iterable[str]) -> list[str]:
    return [o for o in overrides if not is_hydra_override(o)]


def overrides_digest(overrides: Iterable[str]) -> str:
    return hashlib.sha256(json.dumps(job_overrides(overrides)).encode()).hexdigest()[:16]


def validated_by_sweeper(overrides: Iterable[str], digest: str | None) -> bool:
    """`digest`: the one the sweeper validated (None: a job run by hand)."""
    return digest is not None and digest == overrides_digest(overrides)
