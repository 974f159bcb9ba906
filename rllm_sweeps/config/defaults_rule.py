"""Where SkyRL's default and rLLM's differ, one rule decides (docs/CONFIG.md, "Differing defaults").

The length of training: the embedded default trains ``trainer.total_batches=30`` steps (the tiny default
task's); SkyRL's scripts and rLLM's name their ``epochs`` instead. The rule: a job that names its epochs and
not its steps trains its epochs (``total_batches`` becomes null; :func:`apply_default_rules`), saying so.

The lengths: the embedded ``data.max_prompt_length=32`` and ``data.max_response_length=8`` are the tiny
toy task's. The rule: a job whose data come by path (``data.train_files``, or SkyRL's name for it) and
that leaves a length at that embedded value, by every name, gets SkyRL's default for it (512 and 1024, read
from SkyRL's config), saying so; a value from a task or workflow group, or the user's, stays.

A SkyRL recipe: a job that gives its training data under SkyRL's own name (the key map's native twin
of ``data.train_files``, as every SkyRL script does) is written for SkyRL, and gets SkyRL's default for
the group size and the length of training where it names neither by any name: ``rollout.n`` = SkyRL's
``n_samples_per_prompt`` (5, not rLLM's 8), and its epochs (SkyRL's 1) with no step limit (not the toy
task's 30 steps), saying so.

The KL loss: SkyRL's AlgorithmConfig turns it on (``use_kl_loss=true``, ``kl_loss_coef=0.001``); rLLM's
``kl_beta`` is ``0.0`` (no KL). The rule: **off unless turned on** (rLLM's default, which is also what
SkyRL's own Tinker-mode builder does); once turned on, by either name, a coefficient left out is
SkyRL's ``0.001`` (config/native.py's ``rllm_kl_beta`` resolver). A job whose KL depends on the rule
says so once: one that turns it on without a coefficient, and one written in SkyRL's vocabulary
(its trainer.algorithm settings) that leaves it out, where SkyRL's own trainer would have turned it on.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

from rllm_sweeps.native_keys import SKYRL_NODE, SKYRL_TRAIN_PREFIX

ALGORITHM = SKYRL_TRAIN_PREFIX + "trainer.algorithm."


def _both_names(common: str) -> tuple[str, ...]:
    """A common key and its native twin (the key map's)."""
    from rllm_sweeps.keymap import KEY_MAPPINGS

    return (common, *(m.native for m in KEY_MAPPINGS if m.common == common))


EPOCHS = _both_names("trainer.total_epochs")
# SkyRL's own name for the training data: the mark of a SkyRL recipe (its scripts all set it).
SKYRL_DATA = tuple(k for k in _both_names("data.train_files") if k.startswith(SKYRL_TRAIN_PREFIX))
STEPS = _both_names("trainer.total_batches")
USE_KL = ("algorithm.use_kl_loss", ALGORITHM + "use_kl_loss")
COEF = ("algorithm.kl_beta", ALGORITHM + "kl_loss_coef")


# Keys whose value decides a rule: a job that sets one is composed whole (config/job_composer.py).
DECIDING_KEYS = frozenset({*EPOCHS, *STEPS, *_both_names("data.train_files")})

# The common lengths -> SkyRL's key whose default a job with its data by path gets (relative to skyrl.train):
# the key map's first twin of each.
LENGTHS = {
    common: _both_names(common)[1].removeprefix(SKYRL_TRAIN_PREFIX)
    for common in ("data.max_prompt_length", "data.max_response_length")
}


def _named(explicit: set[str], keys: Iterable[str]) -> bool:
    return any(k in explicit for k in keys)


def epochs_decide(explicit: Iterable[str]) -> bool:
    """The epochs, not a step count, end training: named without steps, or a SkyRL recipe naming neither."""
    explicit = set(explicit)
    if _named(explicit, STEPS):
        return False
    return _named(explicit, EPOCHS) or skyrl_recipe(explicit)


def skyrl_recipe(explicit: Iterable[str]) -> bool:
    """The job names its training data by SkyRL's key (a SkyRL script's command line)."""
    return _named(set(explicit), SKYRL_DATA)


def skyrl_recipe_values(explicit: Iterable[str]) -> dict[str, Any]:
    """The common keys a SkyRL recipe takes SkyRL's default for (common key -> value): those it names by no name."""
    from rllm_sweeps.config.native import skyrl_train_defaults
    from rllm_sweeps.plain_tree import plain_get

    explicit = set(explicit)
    if not skyrl_recipe(explicit):
        return {}
    keys = [k for k in ("rollout.n", "trainer.total_epochs") if not _named(explicit, _both_names(k))]
    return {k: plain_get(skyrl_train_defaults(), _both_names(k)[1].removeprefix(SKYRL_TRAIN_PREFIX)) for k in keys}


@functools.cache
def embedded_common_default(key: str) -> Any:
    """conf/config.yaml's value of a common key (no Hydra: a plain read of the one file that holds it)."""
    from omegaconf import OmegaConf

    from rllm_sweeps.config.compose import CONF_DIR

    return OmegaConf.select(OmegaConf.load(CONF_DIR / "config.yaml"), key)


def skyrl_lengths(cfg: Any, explicit: Iterable[str]) -> dict[str, Any]:
    """The lengths that take SkyRL's default (common key -> value): the job's data come by path and the
    length is the embedded toy value, named by no name."""
    from omegaconf import OmegaConf

    from rllm_sweeps.config.native import skyrl_train_defaults
    from rllm_sweeps.plain_tree import plain_get

    explicit = set(explicit)
    if OmegaConf.select(cfg, "data.train_files") is None:
        return {}
    return {
        common: plain_get(skyrl_train_defaults(), rel)
        for common, rel in LENGTHS.items()
        if not _named(explicit, _both_names(common))
        and OmegaConf.select(cfg, common) == embedded_common_default(common)
    }


def apply_default_rules(cfg: Any, explicit: Iterable[str]) -> None:
    """The rules that change a value (in place, before validation): the length of training, the lengths of
    a job's prompts and responses on data by path."""
    if epochs_decide(explicit):
        cfg.trainer.total_batches = None
    for common, value in {**skyrl_recipe_values(explicit), **skyrl_lengths(cfg, explicit)}.items():
        *parents, leaf = common.split(".")
        node = cfg
        for part in parents:
            node = node[part]
        node[leaf] = value


def default_rule_notes(plain: dict[str, Any], explicit: Iterable[str]) -> list[str]:
    """The notes of a job whose length or KL is decided by a rule (none for one that sets them fully)."""
    explicit = set(explicit)
    notes = []
    epochs = (plain.get("trainer") or {}).get("total_epochs")
    if epochs_decide(explicit) and _named(explicit, EPOCHS):
        notes.append(
            f"note: trainer.total_batches=None: trainer.total_epochs={epochs!r} is set and the steps are not, so the "
            "epochs decide (the embedded default's 30 steps are for its tiny task); docs/CONFIG.md"
        )
    for common in skyrl_recipe_values(explicit):
        value = epochs if common == "trainer.total_epochs" else (plain.get("rollout") or {}).get("n")
        extra = " and no step limit (trainer.total_batches=None)" if common == "trainer.total_epochs" else ""
        notes.append(
            f"note: {common}={value!r}{extra}: SkyRL's default, for a SkyRL recipe (its data by SkyRL's name, "
            f"{SKYRL_DATA[0].removeprefix(SKYRL_TRAIN_PREFIX)}) that sets neither name of it; docs/CONFIG.md"
        )
    return notes + _length_notes(plain, explicit) + _kl_notes(plain, explicit)


def _length_notes(plain: dict[str, Any], explicit: set[str]) -> list[str]:
    from rllm_sweeps.config.native import skyrl_train_defaults
    from rllm_sweeps.plain_tree import plain_get, plain_get_or_none

    if plain_get_or_none(plain, "data.train_files") is None:
        return []
    notes = []
    for common, rel in LENGTHS.items():
        skyrl = plain_get(skyrl_train_defaults(), rel)
        value = plain_get_or_none(plain, common)
        if not _named(explicit, _both_names(common)) and value == skyrl != embedded_common_default(common):
            notes.append(
                f"note: {common}={value!r}: SkyRL's default for a job with its data by path (the embedded "
                f"{embedded_common_default(common)!r} is the toy task's); docs/CONFIG.md"
            )
    return notes


def _kl_notes(plain: dict[str, Any], explicit: set[str]) -> list[str]:
    algorithm = plain.get("algorithm") or {}
    skyrl_algorithm = ((plain.get(SKYRL_NODE) or {}).get("train") or {}).get("trainer", {}).get("algorithm") or {}
    term = (
        "loss" if algorithm.get("use_kl_loss") else "in the reward" if skyrl_algorithm.get("use_kl_in_reward") else None
    )
    if term is not None and not _named(explicit, COEF):
        return [
            f"note: algorithm.kl_beta={algorithm.get('kl_beta')!r}: the KL {term} is on and its coefficient left "
            "out, so SkyRL's default applies (rLLM's kl_beta default, 0.0, is no KL); docs/CONFIG.md"
        ]
    skyrl_vocabulary = any(k.startswith(ALGORITHM) for k in explicit)
    if skyrl_vocabulary and not _named(explicit, USE_KL):
        return [
            "note: algorithm.use_kl_loss=False: left out, the KL loss is off (rLLM's default); SkyRL's own trainer "
            "would turn it on with a coefficient of 0.001: set algorithm.use_kl_loss=true for that; docs/CONFIG.md"
        ]
    return []


__all__ = ["DECIDING_KEYS", "apply_default_rules", "default_rule_notes"]
