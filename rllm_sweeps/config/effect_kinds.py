"""The vocabulary of config/setting_effect.py's rule: what a setting does (read, unused, refused) and
the configuration it is judged in."""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rllm_sweeps.native_keys import SKYRL_TRAIN_PREFIX


class Kind(enum.Enum):
    READ = "read"
    UNUSED = "unused"  # accepted with a note: SkyRL ignores it in this configuration too
    REFUSED = "refused"  # what runs would differ from what SkyRL does with it


@dataclass(frozen=True)
class Effect:
    kind: Kind
    why: str = ""


READ = Effect(Kind.READ)


def unused(why: str) -> Effect:
    return Effect(Kind.UNUSED, why)


def refused(why: str) -> Effect:
    return Effect(Kind.REFUSED, why)


@dataclass(frozen=True)
class Situation:
    """The configuration a setting is judged in (the resolved plain config)."""

    plain: dict[str, Any]

    def get(self, key: str, default: Any = None) -> Any:
        node: Any = self.plain
        for part in key.split("."):
            if not isinstance(node, dict) or part not in node:
                return default
            node = node[part]
        return node

    @property
    def engine(self) -> str:
        return str(self.get("skyrl.engine"))

    @property
    def loss(self) -> str:
        return str(self.get("algorithm.loss_fn"))

    @property
    def estimator(self) -> str:
        return str(self.get("algorithm.adv_estimator"))

    @property
    def kl_loss(self) -> bool:
        return bool(self.get("algorithm.use_kl_loss"))

    @property
    def kl_in_reward(self) -> bool:
        return bool(self.get(SKYRL_TRAIN_PREFIX + "trainer.algorithm.use_kl_in_reward"))

    def algorithm(self, leaf: str, default: Any = None) -> Any:
        return self.get(SKYRL_TRAIN_PREFIX + "trainer.algorithm." + leaf, default)


Rule = Callable[[Situation, Any], Effect]


__all__ = ["READ", "Effect", "Kind", "Rule", "Situation", "refused", "unused"]
