"""A sweep dimension over a setting that changes nothing in any of its jobs is an error: the jobs would
be identical (config/setting_effect.py decides what changes nothing of a native setting, and
config/common_effect.py of a common key: greedy validation's top_p, the clip of a loss that has none;
a single job only gets a note)."""

from __future__ import annotations

from typing import Any

from rllm_sweeps.config.common_effect import RULES as COMMON_RULES
from rllm_sweeps.config.common_effect import unused_common
from rllm_sweeps.native_keys import SKYRL_JAX_PREFIX, SKYRL_TRAIN_PREFIX
from rllm_sweeps.plain_tree import plain_get_or_none
from rllm_sweeps.problems import ConfigIssue
from rllm_sweeps.sweep.param import Param


class IdleDimensions:
    """Watches a sweep's jobs: which swept native settings changed nothing in every one of them."""

    def __init__(self, parameters: tuple[Param, ...] | list[Param]) -> None:
        from rllm_sweeps.config.spelling import canonical_key

        self.why: dict[str, tuple[str, str]] = {}  # canonical key -> (where it was given, why, once seen)
        self.watched = {canonical_key(p.key): p.source for p in parameters if p.is_swept and not p.is_group}
        native = (SKYRL_TRAIN_PREFIX, SKYRL_JAX_PREFIX)
        self.watched = {k: s for k, s in self.watched.items() if k.startswith(native) or k in COMMON_RULES}

    def observe(self, plain: dict[str, Any]) -> None:
        """One valid job's resolved config."""
        from rllm_sweeps.config.setting_effect import Kind, setting_effect

        for key in list(self.watched):
            if key in COMMON_RULES:
                why = unused_common(key, plain)
            else:
                effect = setting_effect(key, plain_get_or_none(plain, key), plain)
                why = effect.why if effect.kind is Kind.UNUSED else None
            if why is not None:
                self.why.setdefault(key, (self.watched[key], why))
            else:
                self.watched.pop(key)
                self.why.pop(key, None)

    def issues(self) -> list[ConfigIssue]:
        return [
            ConfigIssue(
                source,
                f"{source}: a sweep over {key} runs identical jobs: it changes nothing in any of them ({why})",
            )
            for key, (source, why) in self.why.items()
            if key in self.watched
        ]


__all__ = ["IdleDimensions"]
