"""The sweep keys a PBT schedule may change mid-run: those of the loop's settings it reads afresh
at each step (records/schedule.py's MUTABLE_SETTINGS), by the key that sets them. The sweeper
refuses a population that differs in any other key; a trial's job maps its keys to them."""

from __future__ import annotations


def schedule_field(key: str) -> str | None:
    """The LoopSettings field a sweep key sets, where a schedule may change it mid-run; else None."""
    from rllm_sweeps.records.schedule import MUTABLE_SETTINGS
    from rllm_sweeps.training.settings import CONFIG_KEYS

    return next((f for f, k in CONFIG_KEYS.items() if k == key and f in MUTABLE_SETTINGS), None)


def mutable_keys() -> list[str]:
    """Every such key, sorted (what a refusal lists)."""
    from rllm_sweeps.records.schedule import MUTABLE_SETTINGS
    from rllm_sweeps.training.settings import CONFIG_KEYS

    return sorted(CONFIG_KEYS[f] for f in MUTABLE_SETTINGS)
