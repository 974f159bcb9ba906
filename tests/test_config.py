"""The config tree: common keys are the front door, native keys a faithful mirror,
every mistake an immediate and clear error."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from rllm_sweeps.config.compose import CONF_DIR, compose_config
from rllm_sweeps.config.load import load_config
from rllm_sweeps.config.native import skyrl_own
from rllm_sweeps.config.validate import validate
from rllm_sweeps.keymap import KEY_MAPPINGS
from rllm_sweeps.problems import ConfigError

pytestmark = pytest.mark.slow  # composes the real config tree through Hydra and SkyRL; some run train.py

REPO = Path(__file__).resolve().parents[1]
TRAIN = str(REPO / "train.py")


def quiet(_: str) -> None:
    pass


def config_error(overrides: list[str]) -> str:
    with pytest.raises(ConfigError) as info:
        load_config(overrides, notify=quiet)
    return str(info.value)


def test_default_config_is_valid_and_builds_a_skyrl_config_that_passes_validate_cfg():
    from skyrl.train.config import SkyRLTrainConfig
    from skyrl.train.config.config import build_nested_dataclass
    from skyrl.train.utils.utils import validate_cfg

    cfg = load_config([], notify=quiet)
    native = build_nested_dataclass(SkyRLTrainConfig, skyrl_own(OmegaConf.to_container(cfg.skyrl.train, resolve=True)))
    validate_cfg(native)
    assert native.trainer.policy.optimizer_config.lr == cfg.trainer.lr


@pytest.mark.timed
def test_unknown_key_on_the_command_line_fails_fast_with_a_suggestion(tmp_path):
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, TRAIN, "trainer.lrr=1e-5"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    elapsed = time.monotonic() - start
    assert proc.returncode != 0
    assert elapsed < 10, f"took {elapsed:.1f}s"
    assert "trainer.lrr" in proc.stderr and "did you mean 'trainer.lr'" in proc.stderr
    assert "Traceback" not in proc.stderr
    # Nothing started: no Hydra run directory, no checkpoint, no Ray session.
    assert list(tmp_path.iterdir()) == []


def test_all_unknown_keys_are_reported_at_once():
    message = config_error(["trainer.lrr=1e-5", "rollout.nn=2"])
    assert "trainer.lrr" in message and "rollout.nn" in message
    assert "'rollout.n'" in message


@pytest.mark.parametrize(
    ("override", "key", "bad", "allowed"),
    [
        ("trainer.lr=abc", "trainer.lr", "'abc'", "a number > 0"),
        ("trainer.lr=-1", "trainer.lr", "-1", "a number > 0"),
        ("rollout.n=0", "rollout.n", "0", "an integer >= 1"),
        ("algorithm.adv_estimator=foo", "algorithm.adv_estimator", "'foo'", "grpo, rloo, reinforce"),
        ("skyrl.engine=bar", "skyrl.engine", "'bar'", "jax, fsdp, megatron"),
        (
            "skyrl.train.trainer.strategy=deepspeed",
            "skyrl.train.trainer.strategy",
            "'deepspeed'",
            "jax, fsdp, megatron",  # SkyRL's strategy is skyrl.engine's native name
        ),
        ("skyrl.train.trainer.logger=foo", "skyrl.train.trainer.logger", "'foo'", "console, tensorboard, wandb"),
        ("skyrl.train.trainer.epochs=many", "skyrl.train.trainer.epochs", "'many'", "int"),
        ("skyrl.jax.max_lora_adapters=x", "skyrl.jax.max_lora_adapters", "'x'", "integer"),
    ],
)
def test_bad_value_is_rejected_naming_key_value_and_allowed_values(override, key, bad, allowed):
    message = config_error([override])
    assert f"{key}={bad}" in message
    assert allowed in message


def test_a_tracker_that_is_not_installed_is_rejected_before_the_job():
    import importlib.util

    if importlib.util.find_spec("wandb") is not None:
        pytest.skip("wandb is installed here")
    message = config_error(["trainer.logger=[console,wandb]"])
    assert "trainer.logger" in message and "pip install wandb" in message


def test_several_bad_values_are_reported_together():
    message = config_error(["trainer.lr=-1", "rollout.n=0", "algorithm.adv_estimator=foo"])
    assert "3 problems" in message


def test_cross_key_rule_names_both_keys():
    message = config_error(["data.train_batch_size=6", "trainer.mini_batch_size=4"])
    assert "data.train_batch_size" in message and "trainer.mini_batch_size" in message


def test_common_and_native_key_set_to_different_values_is_an_error_naming_both():
    message = config_error(["trainer.lr=3e-6", "skyrl.train.trainer.policy.optimizer_config.lr=1e-6"])
    assert "trainer.lr" in message and "skyrl.train.trainer.policy.optimizer_config.lr" in message


def test_common_and_native_key_set_to_the_same_value_is_fine():
    cfg = load_config(["trainer.lr=3e-6", "skyrl.train.trainer.policy.optimizer_config.lr=3e-6"], notify=quiet)
    assert cfg.trainer.lr == 3e-6


def test_native_key_set_alone_is_honoured_and_the_common_key_reports_it():
    notices: list[str] = []
    cfg = load_config(["skyrl.train.trainer.policy.optimizer_config.lr=2e-6"], notify=notices.append)
    assert cfg.trainer.lr == 2e-6
    assert cfg.skyrl.train.trainer.policy.optimizer_config.lr == 2e-6
    assert len(notices) == 1 and "trainer.lr" in notices[0]


def test_native_key_with_a_transform_set_alone_is_translated_back():
    cfg = load_config(["skyrl.train.trainer.algorithm.advantage_estimator=rloo"], notify=quiet)
    assert cfg.algorithm.adv_estimator == "rloo"
    cfg = load_config(["skyrl.train.trainer.algorithm.loss_reduction=sequence_mean"], notify=quiet)
    assert cfg.algorithm.loss_agg_mode == "seq-mean-token-mean"


def test_cfg_job_prints_the_reconciled_config():
    proc = subprocess.run(
        [sys.executable, TRAIN, "--cfg", "job", "skyrl.train.trainer.policy.optimizer_config.lr=2e-6"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    printed = OmegaConf.create(proc.stdout)
    assert printed.trainer.lr == 2e-6


def test_help_lists_the_main_common_keys_and_the_config_groups_with_their_choices():
    proc = subprocess.run([sys.executable, TRAIN, "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    for key in ("trainer.lr", "rollout.n", "data.train_batch_size", "algorithm.adv_estimator", "model.path"):
        assert key in proc.stdout
    groups = {line.split()[0]: line for line in proc.stdout.splitlines() if line.startswith("  ") and "= " in line}
    assert "gsm8k | guess_letter | toy_letters*" in groups["task="]
    assert "multi_turn | single_turn* | solver_judge" in groups["workflow="]
    assert "local" in groups["cluster="]
    assert "lr_grid" in proc.stdout  # the sweep files +sweep= selects


# SkyRL's own GSM8K GRPO example (examples/train/gsm8k/run_gsm8k.sh in SkyRL 0.4.0), with
# its shell variables expanded as the script does (LOGGER=console, as its comment suggests).
SKYRL_GSM8K_SCRIPT = """
data.train_data="['/data/gsm8k/train.parquet']"
data.val_data="['/data/gsm8k/validation.parquet']"
trainer.algorithm.advantage_estimator="grpo"
trainer.policy.model.path="Qwen/Qwen2.5-1.5B-Instruct"
trainer.placement.colocate_all=true
trainer.strategy=fsdp2
trainer.placement.policy_num_gpus_per_node=4
trainer.placement.critic_num_gpus_per_node=4
trainer.placement.ref_num_gpus_per_node=4
generator.inference_engine.num_engines=2
generator.inference_engine.tensor_parallel_size=2
trainer.epochs=20
trainer.eval_batch_size=1024
trainer.eval_before_train=true
trainer.eval_interval=5
trainer.update_epochs_per_batch=1
trainer.train_batch_size=1024
trainer.policy_mini_batch_size=256
trainer.micro_forward_batch_size_per_gpu=64
trainer.micro_train_batch_size_per_gpu=64
trainer.ckpt_interval=10
trainer.max_prompt_length=512
generator.sampling_params.max_generate_length=1024
trainer.policy.optimizer_config.lr=1.0e-6
trainer.algorithm.use_kl_loss=true
generator.inference_engine.backend=vllm
generator.inference_engine.run_engines_locally=true
generator.inference_engine.weight_sync_backend=nccl
generator.inference_engine.distributed_executor_backend=mp
generator.inference_engine.async_engine=true
generator.batched=true
environment.env_class=gsm8k
generator.n_samples_per_prompt=5
generator.inference_engine.gpu_memory_utilization=0.8
trainer.logger="console"
trainer.project_name="gsm8k"
trainer.run_name="gsm8k_test"
trainer.resume_mode=null
trainer.log_path="/tmp/skyrl-logs"
trainer.ckpt_path="/ckpts/gsm8k_1.5B_ckpt"
"""


def _shell_words(script: str) -> list[str]:
    import shlex

    return [w for line in script.strip().splitlines() for w in shlex.split(line)]


@pytest.mark.parametrize("prefix", ["skyrl.train.", ""], ids=["prefixed", "verbatim"])
def test_skyrl_gsm8k_example_overrides_compose_and_validate_under_skyrl_train(prefix):
    # SkyRL's own lines work with or without the skyrl.train. prefix (config/spelling.py).
    overrides = ["skyrl.engine=fsdp"] + [prefix + w for w in _shell_words(SKYRL_GSM8K_SCRIPT)]
    # Refused: only the script's data files, which are read but are not on this machine. Its KL loss runs
    # against SkyRL's own FSDP reference worker group (engines/skyrl_reference.py). What SkyRL itself
    # ignores here (generator.batched, the critic's GPUs, SkyRL's working paths) is no problem: a note
    # each, once the rest validates.
    with pytest.raises(ConfigError) as info:
        load_config(overrides, notify=quiet)
    refused = {i.key for i in info.value.issues}
    missing = {"data.train_files", "data.val_files"}
    assert refused == missing
    assert all("no such file" in i.message for i in info.value.issues if i.key in missing)
    # Without the data (files this machine lacks), its environment goes too.
    keys = {"data.train_data", "data.val_data", "environment.env_class"}
    overrides = [o for o in overrides if o.removeprefix("skyrl.train.").split("=")[0] not in keys]
    notes: list[str] = []
    load_config(overrides, notify=notes.append)
    unused = {n.split()[1].split("=")[0] for n in notes if "changes nothing here" in n}
    assert unused == {
        "skyrl.train." + k
        for k in (
            "generator.batched",
            "trainer.placement.critic_num_gpus_per_node",
            "trainer.log_path",
            "trainer.ckpt_path",
        )
    }, notes
    cfg = load_config(overrides, notify=quiet)
    # The common keys report what the native overrides set.
    assert cfg.data.train_batch_size == 1024
    assert cfg.rollout.n == 5
    assert cfg.trainer.total_epochs == 20
    assert cfg.model.path == "Qwen/Qwen2.5-1.5B-Instruct"
    assert cfg.resources.gpus_per_node == 4
    assert cfg.skyrl.train.generator.inference_engine.num_engines == 2


def test_a_native_key_that_skyrl_does_not_have_is_reported_with_suggestions():
    # (SkyRL 0.4 itself drops generator.inference_engine.async_engine=true: tests/test_spelling.py)
    message = config_error(["skyrl.train.generator.inference_engine.gpu_memory_utilisation=0.5"])
    assert "unknown key 'skyrl.train.generator.inference_engine.gpu_memory_utilisation'" in message
    assert "did you mean 'skyrl.train.generator.inference_engine.gpu_memory_utilization'" in message


def _another_value(value):
    """A valid value different from `value`, for the table-driven mapping test."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value * 2 if value else 1
    if isinstance(value, float):
        return value / 2 if value else 0.5
    if isinstance(value, list):
        return [v / 2 for v in value] if all(isinstance(v, float) for v in value) else value
    return None


SKYRL_DATA = REPO / "tests" / "data" / "skyrl_gsm8k_small.jsonl"
SPECIAL_VALUES = {
    "model.path": "my-org/my-model",  # a hub id: validated at job start (a local path must exist)
    "trainer.logger": ["console", "tensorboard"],
    "trainer.project_name": "other",
    "trainer.experiment_name": "other",
    "trainer.total_batches": 7,
    "algorithm.adv_estimator": "rloo",
    "algorithm.loss_agg_mode": "seq-mean-token-mean",
    "algorithm.lr_schedule": "cosine",
    "trainer.mini_batch_size": 8,
    "trainer.adam_betas": [0.8, 0.99],
    "resources.gpus_per_node": 2,
    "algorithm.eps_clip": 0.1,
    "rollout.train.top_p": 0.5,
    "rollout.val.top_p": 0.5,
    "algorithm.loss_fn": "gspo",  # a SkyRL policy loss (fsdp)
    "trainer.resume_mode": "disable",
    "skyrl.engine": "megatron",
    # SkyRL-format rows (tests/data_files.py's skyrl_rows), read by the data check
    "data.train_files": [str(SKYRL_DATA)],
    "data.val_files": [str(SKYRL_DATA)],
}
# Keys only the jax engine reads (its engine class, rllm_sweeps/engines/), or whose test value the GPU trainer refuses
# (config/gpu_trainer_rules.py: top-p < 1 in training): their mapping is tested there.
JAX_ENGINE_KEYS = {"algorithm.use_kl_loss", "rollout.train.top_p"}
# Keys whose other values need another config group (the single-turn workflow makes one call).
# Data by path: training files need validation files (and the other way round).
GROUP_FOR = {
    "workflow.max_turns": "workflow=multi_turn",
    "data.train_files": f"data.val_files=[{SKYRL_DATA}]",
    "data.val_files": f"data.train_files=[{SKYRL_DATA}]",
}


@pytest.mark.parametrize("mapping", KEY_MAPPINGS, ids=lambda m: f"{m.common}->{m.native}")
def test_overriding_a_common_key_changes_its_native_key(mapping):
    default = load_config([], notify=quiet)
    old = OmegaConf.select(default, mapping.common)
    old = OmegaConf.to_container(old) if OmegaConf.is_config(old) else old
    new = SPECIAL_VALUES.get(mapping.common, _another_value(old))
    assert new is not None and new != old, f"no test value for {mapping.common}"
    override = f"{mapping.common}={_hydra_literal(new)}"
    # Native checks of the GPU trainer apply under its engine (colocated: the vLLM engines follow
    # the GPUs, conf/backend/skyrl.yaml).
    jax = mapping.native.startswith("skyrl.jax.") or mapping.common in JAX_ENGINE_KEYS
    engine = [] if jax or mapping.common == "skyrl.engine" else ["skyrl.engine=fsdp"]
    if mapping.common == "skyrl.engine":
        engine.append("resources.gpus_per_node=1")
        engine.append("skyrl.train.trainer.policy.megatron_config.lora_config.merge_lora=false")
    if mapping.common != "resources.gpus_per_node" and engine:
        engine.append("resources.gpus_per_node=1")
    if mapping.common == "algorithm.kl_beta":
        engine = ["algorithm.use_kl_loss=true"]  # a coefficient applies with the KL loss on (jax)
    if mapping.common in GROUP_FOR:
        engine.append(GROUP_FOR[mapping.common])
    cfg = load_config([override, *engine], notify=quiet)
    native = OmegaConf.select(cfg, mapping.native)
    native = OmegaConf.to_container(native) if OmegaConf.is_config(native) else native
    assert native == mapping.native_value(new)
    assert native != mapping.native_value(old)


def _hydra_literal(value) -> str:
    if isinstance(value, list):
        return "[" + ",".join(_hydra_literal(v) for v in value) + "]"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return f"'{value}'"
    return repr(value)


def shipped_configs() -> list[list[str]]:
    """Overrides selecting each example config shipped in conf/ (task, backend, cluster)."""
    choices = []
    for group in ("task", "backend", "cluster"):
        for path in sorted((CONF_DIR / group).glob("*.yaml")):
            choices.append([f"{group}={path.stem}"])
    return choices


@pytest.mark.parametrize("overrides", shipped_configs(), ids=lambda o: o[0])
def test_every_shipped_config_builds_a_skyrl_config_that_passes_validate_cfg(overrides):
    from skyrl.train.config import SkyRLTrainConfig
    from skyrl.train.config.config import build_nested_dataclass
    from skyrl.train.utils.utils import validate_cfg

    cfg = load_config(overrides, notify=quiet)
    validate_cfg(
        build_nested_dataclass(SkyRLTrainConfig, skyrl_own(OmegaConf.to_container(cfg.skyrl.train, resolve=True)))
    )


def test_jax_section_holds_every_jax_backend_setting_with_skyrl_defaults_unless_noted():
    from skyrl.backends.jax import JaxBackendConfig

    cfg = compose_config([])
    ours = OmegaConf.to_container(cfg.skyrl.jax, resolve=True)
    theirs = JaxBackendConfig().model_dump()
    assert set(ours) == set(theirs)
    differing = {k for k in ours if ours[k] != theirs[k]}
    # Each deliberate difference is commented in conf/backend/skyrl.yaml.
    assert differing == {"max_lora_adapters", "max_lora_rank", "train_micro_batch_size", "sample_max_num_sequences"}
    assert ours["train_micro_batch_size"] == ours["sample_max_num_sequences"] == "auto"


def test_keys_listing_shows_every_mapped_pair():
    from rllm_sweeps.cli import main

    proc = subprocess.run(
        [sys.executable, "-c", "import sys; from rllm_sweeps.cli import main; sys.exit(main(['keys']))"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    listed = set()
    for line in proc.stdout.splitlines()[1:]:
        if not line.strip():
            break  # the footer follows the table
        common, native = line.split()[:2]
        if common != "-":  # "-": a native key the loop reads directly (tests/test_engines.py)
            listed.add((common, native))
    assert listed == {(m.common, m.native) for m in KEY_MAPPINGS}
    assert main is not None


def test_the_key_map_has_no_second_copy_in_the_tree():
    """Native key paths of the map appear in keymap.py only (tests and docs aside)."""
    natives = {m.native.removeprefix("skyrl.train.").removeprefix("skyrl.jax.") for m in KEY_MAPPINGS}
    natives -= {m.common for m in KEY_MAPPINGS}  # same spelling in both trees (trainer.seed): not a copy
    pattern = re.compile("|".join(re.escape(n) for n in natives if "." in n))
    offenders = []
    for path in [*REPO.glob("rllm_sweeps/**/*.py"), *REPO.glob("conf/**/*.yaml"), REPO / "train.py"]:
        if path.name == "keymap.py":
            continue
        for lineno, line in enumerate(path.read_text().splitlines(), 1):
            if pattern.search(line):
                offenders.append(f"{path.relative_to(REPO)}:{lineno}: {line.strip()}")
    assert offenders == []


def test_every_common_key_in_conf_has_a_validation_rule():
    from rllm_sweeps.config.rules import RULES

    cfg = OmegaConf.to_container(OmegaConf.load(CONF_DIR / "config.yaml"))
    cfg.pop("defaults")
    cfg.pop("hydra")
    cfg.pop("sweep")  # the sweep's settings: checked by rllm_sweeps.sweep.spec
    leaves = set()

    def walk(node, prefix):
        for k, v in node.items():
            if isinstance(v, dict):
                walk(v, f"{prefix}{k}.")
            else:
                leaves.add(prefix + k)

    walk(cfg, "")
    assert leaves <= set(RULES), sorted(leaves - set(RULES))


@pytest.mark.timed
def test_composition_and_validation_of_the_default_config_is_fast_after_imports():
    load_config([], notify=quiet)  # imports and first composition
    start = time.perf_counter()
    cfg = load_config([], notify=quiet)
    elapsed = time.perf_counter() - start
    assert validate(cfg) == []
    assert elapsed < 2.0, f"{elapsed:.2f}s"


def test_where_skyrls_and_rllms_kl_defaults_differ_one_rule_decides_and_a_job_that_depends_on_it_says_so(tmp_path):
    # config/defaults_rule.py: off unless turned on (rLLM's), then SkyRL's coefficient if left out.
    notes: list[str] = []
    cfg = load_config(["algorithm.use_kl_loss=true"], notify=notes.append)
    assert cfg.algorithm.kl_beta == 0.001 and cfg.skyrl.train.trainer.algorithm.kl_loss_coef == 0.001
    assert sum("kl_beta=0.001" in n and "SkyRL's default applies" in n for n in notes) == 1, notes
    notes.clear()
    cfg = load_config(["trainer.algorithm.eps_clip_high=0.3"], notify=notes.append)  # SkyRL's vocabulary
    assert cfg.algorithm.use_kl_loss is False and cfg.algorithm.kl_beta == 0.0
    assert sum("SkyRL's own trainer would turn it on" in n for n in notes) == 1, notes
    for fully_set in (["algorithm.use_kl_loss=true", "algorithm.kl_beta=0.01"], ["trainer.lr=1e-3"]):
        notes.clear()
        load_config(fully_set, notify=notes.append)
        assert not any("docs/CONFIG.md" in n for n in notes), notes
    # --cfg job shows the value the rule gave.
    proc = subprocess.run(
        [sys.executable, str(REPO / "train.py"), "--cfg", "job", "algorithm.use_kl_loss=true"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "kl_beta: 0.001" in proc.stdout
