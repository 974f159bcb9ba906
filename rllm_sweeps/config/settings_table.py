"""docs/CONFIG.md's table of SkyRL 0.4's algorithm and batch/epoch settings, generated from the code
that decides them (config/setting_effect.py, keymap.py, training/settings.py), so it cannot drift:
tests/test_settings_table.py compares it with the docs.

    python -m rllm_sweeps.config.settings_table          # the table (Markdown)
    python -m rllm_sweeps.config.settings_table --write  # put it into docs/CONFIG.md

Each setting is judged set to a probe value (true for a flag, else SkyRL's default) in the default
config of each engine: what a user who names it gets there.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
from pathlib import Path
from typing import Any

from rllm_sweeps.config.engine_names import ENGINES
from rllm_sweeps.config.setting_effect import Kind, loop_native_keys, setting_effect
from rllm_sweeps.doc_table import between_markers
from rllm_sweeps.native_keys import SKYRL_TRAIN_PREFIX

ENGINE_OVERRIDES = {
    "jax": ["skyrl.engine=jax"],
    "fsdp": ["skyrl.engine=fsdp", "resources.gpus_per_node=1"],
    "megatron": [
        "skyrl.engine=megatron",
        "resources.gpus_per_node=1",
        "skyrl.train.trainer.policy.megatron_config.lora_config.merge_lora=false",
    ],
}
# The trainer's batch and epoch settings (TrainerConfig), besides every AlgorithmConfig field.
BATCH_SETTINGS = (
    "epochs",
    "max_training_steps",
    "update_epochs_per_batch",
    "train_batch_size",
    "policy_mini_batch_size",
    "critic_mini_batch_size",
    "micro_train_batch_size_per_gpu",
    "micro_forward_batch_size_per_gpu",
    "max_tokens_per_microbatch",
    "eval_batch_size",
    "recompute_old_logprobs_per_minibatch",
)
# Where the loop's implementation of SkyRL's trainer settings is tested (training/, the lead's side),
# but for the native keys the loop read before them.
LOOP_TESTS = "tests/test_skyrl_settings.py"
EARLIER_LOOP_TESTS = {
    "trainer.algorithm.cispo.cispo_eps_clip_low": "tests/test_jax_engine_reads.py",
    "trainer.algorithm.cispo.cispo_eps_clip_high": "tests/test_jax_engine_reads.py",
    "trainer.algorithm.max_seq_len": "tests/test_loss_agg.py",
    "trainer.micro_train_batch_size_per_gpu": "tests/test_loss_agg.py",
}
COMMON_TESTS = {
    "algorithm.adv_estimator": "tests/test_advantages.py",
    "algorithm.loss_agg_mode": "tests/test_loss_agg.py",
    "algorithm.loss_fn": "tests/test_engines.py",
    "algorithm.use_kl_loss": "tests/test_engines.py",
    "algorithm.kl_beta": "tests/test_config.py",
    "trainer.mini_batch_size": "tests/test_micro_batch.py",
}
MARK_BEGIN = "<!-- settings table: python -m rllm_sweeps.config.settings_table --write -->"
MARK_END = "<!-- end of the settings table -->"
DOC = Path("docs/CONFIG.md")  # the checkout's, relative to its root (where a developer writes it)


def setting_paths() -> list[str]:
    """Every AlgorithmConfig leaf (trainer.algorithm.*, DAPO's example's two included) and the batch
    settings, relative to skyrl.train."""
    from skyrl.train.config.config import AlgorithmConfig

    from rllm_sweeps.config.native import EXAMPLE_ADDED

    def walk(cls: type, prefix: str) -> list[str]:
        out = []
        for f in dataclasses.fields(cls):
            default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
            if dataclasses.is_dataclass(default):
                out += walk(type(default), f"{prefix}{f.name}.")
            else:
                out.append(prefix + f.name)
        return out

    paths = walk(AlgorithmConfig, "trainer.algorithm.") + list(EXAMPLE_ADDED)
    return paths + [f"trainer.{name}" for name in BATCH_SETTINGS]


def probe(default: Any) -> Any:
    return True if isinstance(default, bool) else default


@functools.cache
def _derived_defaults() -> dict[str, str]:
    """Native settings (relative to skyrl.train) whose default follows a common key: conf/backend/skyrl.yaml's
    plain interpolations (`${rollout.train.temperature}`), read from the file that holds them."""
    from omegaconf import OmegaConf

    from rllm_sweeps.config.compose import CONF_DIR
    from rllm_sweeps.plain_tree import leaves

    train = OmegaConf.to_container(OmegaConf.load(CONF_DIR / "backend" / "skyrl.yaml"))["train"]
    found = {rel: v for rel, v in leaves(train) if isinstance(v, str) and v.startswith("${") and ":" not in v}
    return {rel: v[2:-1] for rel, v in found.items()}


def cell(key: str, plain: dict[str, Any], default: Any) -> tuple[str, str]:
    """(what the loop does, why) for `key` set in `plain`."""
    from rllm_sweeps.keymap import BY_NATIVE

    if key in BY_NATIVE:
        return f"read as `{BY_NATIVE[key].common}`", ""
    effect = setting_effect(key, probe(default), plain)
    common = _derived_defaults().get(key.removeprefix(SKYRL_TRAIN_PREFIX))
    if effect.kind is Kind.READ and common is not None and key not in loop_native_keys():
        return f"follows `{common}` (another value: refused or noted by its rule)", ""
    if effect.kind is Kind.READ:
        return ("implemented by the loop" if key in loop_native_keys() else "read by SkyRL's workers"), ""
    return ("no effect" if effect.kind is Kind.UNUSED else "refused"), effect.why


def test_of(key: str) -> str:
    from rllm_sweeps.keymap import BY_NATIVE

    if key in BY_NATIVE:
        return COMMON_TESTS.get(BY_NATIVE[key].common, "tests/test_config.py")
    if key in loop_native_keys():
        return EARLIER_LOOP_TESTS.get(key.removeprefix(SKYRL_TRAIN_PREFIX), LOOP_TESTS)
    if key.removeprefix(SKYRL_TRAIN_PREFIX) in _derived_defaults():
        return "tests/test_recipes_as_written.py"  # a setting the key map once merged with its common key
    return "tests/test_setting_effect.py"


def table() -> str:
    from rllm_sweeps.config.load import load_config
    from rllm_sweeps.config.native import EXAMPLE_ADDED, skyrl_train_defaults
    from rllm_sweeps.plain_tree import leaves

    defaults = dict(leaves(skyrl_train_defaults())) | EXAMPLE_ADDED
    plains = {}
    for engine in ENGINES:
        from omegaconf import OmegaConf

        plains[engine] = OmegaConf.to_container(
            load_config(ENGINE_OVERRIDES[engine], notify=lambda _: None), resolve=True
        )
    lines = [
        "| `skyrl.train.` setting | jax | fsdp | megatron | why, where not read | test |",
        "|---|---|---|---|---|---|",
    ]
    for rel in setting_paths():
        key = SKYRL_TRAIN_PREFIX + rel
        cells = [cell(key, plains[e], defaults.get(rel)) for e in ENGINES]
        whys = list(dict.fromkeys(why for _, why in cells if why))
        lines.append(f"| `{rel}` | " + " | ".join(c for c, _ in cells) + f" | {'; '.join(whys)} | `{test_of(key)}` |")
    return "\n".join(lines) + "\n"


def with_table(doc: str, text: str) -> str:
    """`doc` with the text between the markers replaced by `text`."""
    return between_markers(doc, MARK_BEGIN, MARK_END, text)


def main(argv: list[str]) -> int:
    text = table()
    if "--write" in argv:
        DOC.write_text(with_table(DOC.read_text(), text))
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
