"""rLLM's unified-trainer settings (rllm.*: conf/config.yaml), read as rLLM's PR #407 trainer reads them:
the part of config/setting_effect.py's rule for them."""

from __future__ import annotations

from typing import Any

from rllm_sweeps.config.effect_kinds import READ, Effect, Rule, Situation, refused, unused


def rllm_rejection_sampling(_s: Situation, value: Any) -> Effect:
    if not value:
        return READ
    return refused(
        "rLLM's episode-mode rejection sampling accumulates whole batches until min_partial_solve_tasks tasks are "
        "partly solved and trains every group of them; the loop has no such mode. DAPO's filter, which drops the "
        "groups whose rewards are all equal and samples more until the batch is full, is "
        "skyrl.train.trainer.algorithm.dynamic_sampling.type=filter"
    )


def rllm_episode_mode_part(s: Situation, _value: Any) -> Effect:
    if s.get("rllm.rejection_sample.enable"):
        return READ  # refused through rllm.rejection_sample.enable
    return unused("rLLM reads it in its episode-mode rejection sampling only (rllm.rejection_sample.enable=false)")


def rllm_min_trajs_per_group(_s: Situation, value: Any) -> Effect:
    if isinstance(value, int) and value <= 1:
        return unused("every group has at least one trajectory: rLLM drops none of them either")
    return refused(
        "rLLM drops the (task, role) groups with fewer trajectories; the loop trains groups of any size (an "
        "episode that is not trainable leaves its group smaller)"
    )


def rllm_stepwise_mode(_s: Situation, value: Any) -> Effect:
    if value == "broadcast":
        return READ  # the trajectory's advantage on each of its steps (training/episodes.py)
    return unused("rLLM's unified trainer turns per_step into broadcast (a deprecation warning), what the loop does")


def rllm_flag_unread(why: str) -> Rule:
    return lambda _s, _v: unused(why)


def rllm_refused_when_true(why: str) -> Rule:
    return lambda _s, value: refused(why) if value else READ


def rllm_compact_mask(s: Situation, _value: Any) -> Effect:
    if s.get("rllm.compact_filtering.enable"):
        return READ  # refused through rllm.compact_filtering.enable
    return unused("only used with rllm.compact_filtering.enable=true, which is off")


def rllm_episode_log_dir(_s: Situation, _value: Any) -> Effect:
    return unused("output only: the job writes its episodes to JOB_DIR/episodes.jsonl, its own directory")


RLLM_EXACT: dict[str, Rule] = {
    "rllm.rejection_sample.enable": rllm_rejection_sampling,
    "rllm.rejection_sample.multiplier": rllm_episode_mode_part,
    "rllm.rejection_sample.min_partial_solve_tasks": rllm_episode_mode_part,
    "rllm.rejection_sample.min_trajs_per_group": rllm_min_trajs_per_group,
    "rllm.stepwise_advantage.mode": rllm_stepwise_mode,
    "rllm.stepwise_advantage.enable": rllm_flag_unread("rLLM's unified trainer reads only stepwise_advantage.mode"),
    "rllm.stepwise_advantage.normalize_by_steps": rllm_refused_when_true(
        "the loop does not divide a trajectory's advantage by its number of steps"
    ),
    "rllm.compact_filtering.enable": rllm_refused_when_true(
        "masking episodes by their termination reason is not implemented: every trainable episode trains"
    ),
    "rllm.episode_logging.log_episodes": lambda _s, _v: READ,  # workflows/episode_log.py
    "rllm.episode_logging.episode_log_dir": rllm_episode_log_dir,
}


def rllm_effect(key: str, value: Any, s: Situation) -> Effect:
    if key in RLLM_EXACT:
        return RLLM_EXACT[key](s, value)
    if key.startswith("rllm.compact_filtering."):
        return rllm_compact_mask(s, value)
    return READ


__all__ = ["rllm_effect"]
