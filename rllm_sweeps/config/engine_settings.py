"""Which set settings the chosen engine cannot honour, judged at validation, and the notes on those it ignores.

Every engine trains with the same loop (training/loop.py) through SkyRL's AbstractBackend; which
keys each one reads is its class's to say (rllm_sweeps/engines/). What validation needs of that is
here, in config, which sits below the engine classes: the common keys an engine cannot honour
(``NOT_READ``), the native settings SkyRL's GPU trainer sets whatever the tree says
(``BUILDER_FORCED``), and the policy losses SkyRL has.

A key is *set* when the user named it (command line, sweep file, sweep dimension) or when its
value differs from its default. Whether a set setting changes what runs is config/setting_effect.py's
rule: refused only when what runs would differ from what SkyRL does with it, accepted with one note
when SkyRL itself would ignore it there (a sweep over such a setting still fails: identical jobs).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from rllm_sweeps.config.engine_names import ENGINES, GPU_TRAINER
from rllm_sweeps.config.native import skyrl_train_defaults
from rllm_sweeps.config.setting_effect import Effect
from rllm_sweeps.keymap import BY_NATIVE, KEY_MAPPINGS
from rllm_sweeps.native_keys import SKYRL_JAX, SKYRL_JAX_PREFIX, SKYRL_TRAIN, SKYRL_TRAIN_PREFIX
from rllm_sweeps.plain_tree import leaves, plain_get_or_none
from rllm_sweeps.problems import ConfigIssue


@dataclass(frozen=True)
class NotRead:
    """A common key some engines cannot honour."""

    engines: tuple[str, ...]
    why: str

    def refuses(self, plain: dict[str, Any]) -> bool:
        return plain_get_or_none(plain, "skyrl.engine") in self.engines


# Common keys that some engine cannot honour, with the reason (every other common key is read
# by the loop or the job on every engine).
NOT_READ: dict[str, NotRead] = {
    "trainer.adam_eps": NotRead(
        GPU_TRAINER, "SkyRL's trainer builds AdamW with torch's eps (1e-8) and takes only the lr at each step"
    ),
}

# The common keys engine_issues() reads besides skyrl.* (a cache of its answers keys on them).
ENGINE_COMMON_KEYS = (
    "skyrl.engine",
    "algorithm.loss_fn",
    "algorithm.adv_estimator",  # setting_effect.py: critic settings
    "algorithm.use_kl_loss",  # reference-model and KL settings
    "algorithm.loss_agg_mode",  # seq-mean-token-sum-norm's constant
    "model.path",  # the KL's reference model
    "rollout.train.temperature",  # the trainer's log-probability temperature follows it
    "data.train_files",  # environment.* is read with a dataset by path
    "rllm",  # rLLM's settings
    *NOT_READ,
)

# What SkyRL's Tinker-mode builder (_build_skyrl_train_config) sets whatever the overrides say,
# relative to skyrl.train, with why the loop cannot honour another value. None today: the builder pins
# the policy's scheduler and warmup (num_warmup_steps=0), but the loop computes the lr of every step from
# them (training/settings.py lr_at: SkyRL's num_warmup_steps and scheduler, or rLLM's warmup_steps_ratio and
# lr_schedule) and the backend applies it.
BUILDER_FORCED: dict[str, tuple[Any, str]] = {}
# SkyRL's builder also turns its KL loss off: the loop adds SkyRL's KL term itself (training/custom_loss.py).

# Native settings whose meaning the loop implements on every engine: the advantages
# (advantages.py) and the loss reduction (datums.py loss_agg_scales). SkyRL's workers never
# read them (skyrl/backends mentions them in comments only); its validate_cfg judges them against
# SkyRL's own PPO loop, so it sees SkyRL's defaults in their place, and rules.py judges the values
# by their common keys (a name only rLLM has, such as reinforce, is valid here).
LOOP_IMPLEMENTED = tuple(
    m.native.removeprefix(SKYRL_TRAIN_PREFIX)
    for m in KEY_MAPPINGS
    if m.common in ("algorithm.adv_estimator", "algorithm.loss_agg_mode")
)


@functools.cache
def _common_defaults() -> dict[str, Any]:
    """conf/config.yaml's values (no Hydra: a plain read of the one file that holds them)."""
    from omegaconf import OmegaConf

    from rllm_sweeps.config.compose import CONF_DIR

    tree = OmegaConf.to_container(OmegaConf.load(CONF_DIR / "config.yaml"))
    rllm = {"rllm." + k: v for k, v in leaves(tree.get("rllm") or {})}  # rLLM's settings (setting_effect.py)
    return {key: plain_get_or_none(tree, key) for key in NOT_READ} | {
        k: v for k, v in rllm.items() if k not in {m.common for m in KEY_MAPPINGS}
    }


@functools.cache
def jax_defaults() -> dict[str, Any]:
    """conf/backend/skyrl.yaml's skyrl.jax values (max_lora_rank, an interpolation of model.lora.rank, aside)."""
    from omegaconf import OmegaConf

    from rllm_sweeps.config.compose import CONF_DIR

    tree = OmegaConf.to_container(OmegaConf.load(CONF_DIR / "backend" / "skyrl.yaml"))
    jax = dict(tree.get("jax") or {})
    jax.pop("max_lora_rank", None)
    return jax


@functools.cache
def _train_defaults() -> dict[str, Any]:
    return dict(leaves(skyrl_train_defaults()))


def set_keys(plain: dict[str, Any], explicit: Iterable[str]) -> Iterator[tuple[str, Any, bool]]:
    """(key, value, named by the user) of every key whose readers depend on the engine."""
    explicit = set(explicit)
    train = plain_get_or_none(plain, SKYRL_TRAIN) or {}
    defaults = _train_defaults()
    for rel, value in leaves(train):
        key = SKYRL_TRAIN_PREFIX + rel
        if key in BY_NATIVE:
            continue  # read through its common key
        named = any(key == e or key.startswith(e + ".") for e in explicit)
        if named or value != defaults.get(rel, value):
            yield key, value, named
    defaults_jax = jax_defaults()
    for rel, value in leaves(plain_get_or_none(plain, SKYRL_JAX) or {}):
        key = SKYRL_JAX_PREFIX + rel
        if key in BY_NATIVE:
            continue
        named = key in explicit
        if named or (rel in defaults_jax and value != defaults_jax[rel]):
            yield key, value, named
    common = _common_defaults()
    for key in common:
        value = plain_get_or_none(plain, key)
        named = key in explicit
        if named or value != common[key]:
            yield key, value, named


def engine_checks_read(path: str) -> bool:
    """Whether engine_issues() may read the value at `path` (a dotted config path): what a cache
    of its answers must key on. The native twins of common keys are read through the common key,
    except where SkyRL's GPU trainer forces their value."""
    if any(path == k or k.startswith(path + ".") or path.startswith(k + ".") for k in ENGINE_COMMON_KEYS):
        return True
    for prefix in (SKYRL_TRAIN_PREFIX, SKYRL_JAX_PREFIX):
        if prefix.startswith(path + "."):
            return True  # skyrl, skyrl.train: the whole tree
        if path.startswith(prefix):
            return path not in BY_NATIVE or path.removeprefix(SKYRL_TRAIN_PREFIX) in BUILDER_FORCED
    return False


def judged_settings(plain: dict[str, Any], explicit: Iterable[str] = ()) -> Iterator[JudgedSetting]:
    """Every set native setting (and common key some engine cannot honour) with its effect in `plain`."""
    for key, value, named in set_keys(plain, explicit):
        yield JudgedSetting(key, value, named, judge(key, value, plain))


def judge(key: str, value: Any, plain: dict[str, Any]) -> Effect:
    """The effect of setting `key` to `value` in `plain`; a native setting named at SkyRL's default is the
    same config as one that leaves it out, which runs: never refused (a note says what another value does)."""
    from rllm_sweeps.config.setting_effect import READ, Kind, refused, setting_effect, unused

    if key in NOT_READ:
        return refused(NOT_READ[key].why) if NOT_READ[key].refuses(plain) else READ
    effect = setting_effect(key, value, plain)
    absent = object()
    if effect.kind is Kind.REFUSED and value == _train_defaults().get(key.removeprefix(SKYRL_TRAIN_PREFIX), absent):
        return unused(f"it is SkyRL's default, as if left out (another value would be refused: {effect.why})")
    return effect


@dataclass(frozen=True)
class JudgedSetting:
    key: str
    value: Any
    named: bool  # named by the user (command line, sweep file, sweep dimension)
    effect: Effect


def unused_notes(plain: dict[str, Any], explicit: Iterable[str]) -> list[str]:
    """One note for each setting the user named that changes nothing here, saying why."""
    from rllm_sweeps.config.setting_effect import Kind

    return [
        f"note: {j.key}={j.value!r} changes nothing here: {j.effect.why}"
        for j in judged_settings(plain, explicit)
        if j.named and j.effect.kind is Kind.UNUSED
    ]


def engine_issues(plain: dict[str, Any], explicit: Iterable[str] = ()) -> list[ConfigIssue]:
    """Settings that would make what runs differ from what SkyRL does with them, each an issue."""
    from rllm_sweeps.config.setting_effect import Kind

    engine = plain_get_or_none(plain, "skyrl.engine")
    if engine not in ENGINES:
        return []  # rules.py reports the engine itself
    issues = [
        ConfigIssue(j.key, f"{j.key}={j.value!r} cannot be honoured with skyrl.engine={engine}: {j.effect.why}")
        for j in judged_settings(plain, explicit)
        if j.effect.kind is Kind.REFUSED
    ]
    loss = plain_get_or_none(plain, "algorithm.loss_fn")
    # SkyRL's registry imports torch (seconds): asked only for a loss the JAX backend lacks.
    if isinstance(loss, str) and loss not in jax_losses() and loss not in skyrl_policy_losses():
        known = (*jax_losses(), *skyrl_policy_losses())
        issues.append(
            ConfigIssue(
                "algorithm.loss_fn",
                f"algorithm.loss_fn={loss!r} is not a policy loss SkyRL has; one of: {', '.join(dict.fromkeys(known))}",
            )
        )
    if engine in GPU_TRAINER:
        train = plain_get_or_none(plain, SKYRL_TRAIN) or {}
        for rel, (forced, why) in BUILDER_FORCED.items():
            value = plain_get_or_none(train, rel, forced)
            if value != forced:
                key = SKYRL_TRAIN_PREFIX + rel
                if key in BY_NATIVE:
                    key = BY_NATIVE[key].common
                issues.append(
                    ConfigIssue(
                        key,
                        f"{key}={value!r} cannot be honoured by skyrl.engine={engine}: SkyRL's Tinker-mode "
                        f"trainer sets {SKYRL_TRAIN_PREFIX + rel}={forced!r} ({why})",
                    )
                )
    return issues


@functools.cache
def jax_losses() -> tuple[str, ...]:
    """The RL losses SkyRL's JAX backend implements (its LOSS_TYPES, less supervised cross-entropy)."""
    from skyrl.tinker.types import LOSS_TYPES

    return tuple(name for name in LOSS_TYPES if name != "cross_entropy")


@functools.cache
def skyrl_policy_losses() -> tuple[str, ...]:
    """Every RL policy loss SkyRL registers (its PolicyLossRegistry, less supervised cross-entropy),
    by the loop's names: each engine trains with any of them (jax: the ones its backend lacks as
    custom losses, training/custom_loss.py)."""
    from skyrl.backends.skyrl_train.utils.ppo_utils import PolicyLossRegistry

    from rllm_sweeps.keymap import NATIVE_LOSS_NAMES

    common = {native: name for name, native in NATIVE_LOSS_NAMES.items()}
    return tuple(common.get(n, n) for n in PolicyLossRegistry.list_available() if n != "cross_entropy")


__all__ = [
    "BUILDER_FORCED",
    "ENGINE_COMMON_KEYS",
    "NOT_READ",
    "NotRead",
    "engine_checks_read",
    "engine_issues",
    "judged_settings",
    "unused_notes",
    "jax_losses",
    "skyrl_policy_losses",
    "LOOP_IMPLEMENTED",
    "jax_defaults",
]
