"""Where in SkyRL's code a step failed. SkyRL's own errors can be terse (an assertion's text,
"indices must be non-empty"), so a job that fails inside SkyRL records beside its traceback the
SkyRL function that raised, this project's code that called it, and the settings that code works
under, with their values: what a user can change.

    line = skyrl_origin(err, settings)   # None: SkyRL's code is not in what raised
"""

from __future__ import annotations

from collections.abc import Iterator
from types import TracebackType

from rllm_sweeps.training.settings import CONFIG_KEYS, LoopSettings

# The loop's modules that call SkyRL's functions -> the settings (LoopSettings fields) each one
# hands them. A caller not listed here is named without settings.
CALLER_SETTINGS: dict[str, tuple[str, ...]] = {
    "rllm_sweeps.training.dynamic_sampling": (
        "dynamic_sampling_type",
        "dynamic_sampling_max_sample_batches",
        "dynamic_sampling_min_replace_ratio",
        "train_batch_size",
        "n",
    ),
    "rllm_sweeps.training.reward_shaping": (
        "apply_overlong_filtering",
        "zero_variance_filter",
        "zero_variance_filter_tol",
    ),
    "rllm_sweeps.training.kl_reward": ("use_kl_in_reward", "kl_estimator_type", "kl_ctrl_type"),
    "rllm_sweeps.training.custom_loss": ("loss_fn", "loss_agg_mode"),
    "rllm_sweeps.training.episodes": ("adv_estimator", "norm_adv_by_std_in_grpo"),
}


def skyrl_origin(err: BaseException, settings: LoopSettings | None) -> str | None:
    """One line: the SkyRL function that raised (innermost), the project's function that called
    into SkyRL, and that caller's settings (`settings`: the job's, None where they are unknown)."""
    import skyrl  # its package name, not spelled here (native_keys.py holds the config's "skyrl")

    for raised in _chain(err):
        frames = list(_frames(raised.__traceback__))
        in_skyrl = [i for i, (module, *_) in enumerate(frames) if module.partition(".")[0] == skyrl.__name__]
        if not in_skyrl:
            continue
        _, name, path, line = frames[in_skyrl[-1]]
        text = f"raised in SkyRL's {name} ({_short(path)}:{line})"
        callers = [f for f in frames[: in_skyrl[0]] if f[0].startswith("rllm_sweeps.")]
        if callers:
            module, caller, path, line = callers[-1]
            text += f", called from {caller} ({_short(path)}:{line})"
            fields = CALLER_SETTINGS.get(module, ())
            if settings is not None and fields:
                values = ", ".join(f"{CONFIG_KEYS[f]}={getattr(settings, f)!r}" for f in fields)
                text += f"; the settings it works under: {values}"
        return text
    return None


def _chain(err: BaseException) -> Iterator[BaseException]:
    """`err` and what it was raised from or while handling, innermost last."""
    seen: BaseException | None = err
    while seen is not None:
        yield seen
        seen = seen.__cause__ or seen.__context__


def _frames(tb: TracebackType | None) -> Iterator[tuple[str, str, str, int]]:
    """(module, qualified function name, file, line) of each frame, outermost first."""
    while tb is not None:
        frame = tb.tb_frame
        yield str(frame.f_globals.get("__name__", "")), frame.f_code.co_qualname, frame.f_code.co_filename, tb.tb_lineno
        tb = tb.tb_next


def _short(path: str) -> str:
    """A file's path from its package on (`skyrl/train/...`, `rllm_sweeps/training/...`): after the
    innermost site-packages, or from this project's own package directory."""
    parts = path.split("/")
    for i in range(len(parts) - 2, -1, -1):
        if parts[i].endswith("-packages"):
            return "/".join(parts[i + 1 :])
        if parts[i] == __name__.partition(".")[0]:
            return "/".join(parts[i:])
    return path


__all__ = ["CALLER_SETTINGS", "skyrl_origin"]
