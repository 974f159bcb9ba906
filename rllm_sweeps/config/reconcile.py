"""Reconciliation of a composed config's common and SkyRL-native keys (the table: keymap.py).

A native key the user set on its own no longer holds the interpolation config/native.py planted:
its common key takes the translated value, so that reports and the loop see it; both names set to
different values is a conflict.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from omegaconf import DictConfig, OmegaConf

from rllm_sweeps.config.private_api import child_node, raw_value
from rllm_sweeps.keymap import KEY_MAPPINGS, KeyMapping, plain_value


@dataclass(frozen=True)
class Reconciliation:
    """What reconcile() did: common keys set from native overrides, and conflicts."""

    adopted: list[tuple[str, str, Any]]  # (common, native, the native value given)
    conflicts: list[str]  # error messages naming both keys


def is_planted(cfg: DictConfig, mapping: KeyMapping) -> bool:
    """True while the native key still holds the interpolation we planted."""
    parent_key, _, leaf = mapping.native.rpartition(".")
    parent = OmegaConf.select(cfg, parent_key)
    if parent is None or leaf not in parent:
        return True  # native tree absent (another backend)
    raw = raw_value(child_node(parent, leaf))  # the unresolved value
    return raw == mapping.interpolation()


def _translates_back(mapping: KeyMapping, native_value: Any, common_value: Any) -> bool:
    try:
        return mapping.common_value(native_value) == common_value
    except ValueError:
        return True  # not invertible: the forward match decides


def reconcile(cfg: DictConfig, explicit: set[str]) -> Reconciliation:
    """Make common and native keys agree, in place.

    A native key set on its own (it no longer holds our interpolation) is honoured:
    its common key takes the translated value, so reports and the loop see it.
    `explicit` holds the keys the user set (overrides, sweep dimensions). If the user
    set both names of one setting to different values, that is a conflict.
    """
    adopted: list[tuple[str, str, Any]] = []
    conflicts: list[str] = []
    decided: dict[str, tuple[str, Any, Any]] = {}  # common -> (native that set it, its value, common value)
    for mapping in KEY_MAPPINGS:
        if is_planted(cfg, mapping):
            continue
        native_value = plain_value(OmegaConf.select(cfg, mapping.native))
        common_value = plain_value(OmegaConf.select(cfg, mapping.common))
        if mapping.native_value(common_value) == native_value and _translates_back(mapping, native_value, common_value):
            continue  # both spell the same value (a native 1 GPU is not the common 0 it is planted from)
        try:
            wanted = mapping.common_value(native_value)
        except ValueError as err:
            conflicts.append(f"{mapping.native}={native_value!r} disagrees with {mapping.common}: {err}")
            continue
        if mapping.common in explicit and wanted != common_value:
            conflicts.append(
                f"{mapping.common}={common_value!r} and {mapping.native}={native_value!r} set the same "
                f"setting to different values; set only {mapping.common}"
            )
            continue
        if mapping.common in decided and decided[mapping.common][2] != wanted:
            other, other_value, _ = decided[mapping.common]
            conflicts.append(
                f"{other}={other_value!r} and {mapping.native}={native_value!r} both set {mapping.common} "
                f"to different values; set only {mapping.common}"
            )
            continue
        decided[mapping.common] = (mapping.native, native_value, wanted)
    for common, (native, native_value, wanted) in decided.items():
        OmegaConf.update(cfg, common, wanted, merge=False)
        adopted.append((common, native, native_value))
    if not conflicts:
        # Natives set alone become interpolations again, so every name reads one value.
        for mapping in KEY_MAPPINGS:
            if mapping.common in decided and not is_planted(cfg, mapping):
                parent_key, _, leaf = mapping.native.rpartition(".")
                OmegaConf.select(cfg, parent_key)[leaf] = mapping.interpolation()
    return Reconciliation(adopted=adopted, conflicts=conflicts)


__all__ = ["Reconciliation", "is_planted", "reconcile"]
