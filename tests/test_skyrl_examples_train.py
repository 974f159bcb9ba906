"""SkyRL's seven example scripts train 2 steps on skyrl.engine=jax on CPU, with their overrides as the
scripts pass them (tests/data/skyrl_examples) and only what needs a GPU cluster replaced (REPLACED):
the model path, the data paths, the GPU counts, the inference-engine settings, batch sizes and lengths
scaled down (and trainer.epochs, so that the 8 rows the test writes make 2 steps).

The data are SkyRL-format parquet files written here (tests/data_files.py: SkyRL's GSM8K rows). Their
rows name their own environment (a row's env_class wins over environment.env_class, as in SkyRL):
tests/probes/data_env.py:DigitsEnv, a graded reward, because the built-in random tiny model never
answers GSM8K and DAPO's dynamic sampling would find no prompt with a signal. The script's own
environment.env_class=gsm8k stays as it is. The tiny model never ends a reply within the length limit, so
DAPO's overlong filtering (generator.apply_overlong_filtering=true) masks every reply: its two steps
sample, filter, shape and train on no token (tests/test_skyrl_settings.py shows each setting's effect).

Each script trains through the job's own pieces (its config, LoopSettings, the data-by-path task and
workflow, RLTrainer) on one real SkyRL JaxBackend shared by the seven (each with its own adapter),
which keeps this to one model load and compile; tests/test_data_jobs.py runs train.py on such data.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from data_files import QUESTIONS, skyrl_rows, write_parquet
from omegaconf import OmegaConf

from rllm_sweeps.config.load import load_config
from rllm_sweeps.engines import JaxEngine
from rllm_sweeps.training.loop import RLTrainer
from rllm_sweeps.training.settings import LoopSettings

pytestmark = pytest.mark.slow

EXAMPLES = Path(__file__).parent / "data" / "skyrl_examples"
SCRIPTS = sorted(p.stem for p in EXAMPLES.glob("*.txt"))
ENV = "tests.probes.data_env:DigitsEnv"
DROP = object()
# What runs on CPU in place of the cluster's values (everything else is the script's).
REPLACED = {
    "trainer.policy.model.path": "builtin:tiny-qwen3",
    "trainer.strategy": DROP,  # fsdp: the engine, skyrl.engine=jax here (the two name one setting)
    "trainer.placement.policy_num_gpus_per_node": DROP,
    "trainer.placement.ref_num_gpus_per_node": DROP,
    "trainer.placement.critic_num_gpus_per_node": DROP,
    "trainer.train_batch_size": 4,  # 1024 prompts -> 4
    "trainer.policy_mini_batch_size": 1,  # 256 -> 1: the scripts' 4 optimizer steps per batch
    "trainer.eval_batch_size": 4,
    "trainer.micro_train_batch_size_per_gpu": 1,
    "trainer.micro_forward_batch_size_per_gpu": 1,
    "generator.sampling_params.max_generate_length": 8,  # 1024 tokens -> 8
    "generator.eval_sampling_params.max_generate_length": 8,
    "trainer.algorithm.overlong_buffer_len": 4,  # DAPO's 512 of 1024 -> 4 of 8
    "trainer.epochs": 1,  # 8 rows / 4 a batch: 2 steps
    "trainer.logger": "console",  # "change to console to print to stdout", the scripts say
}
_adapters = itertools.count()


def cpu_overrides(name: str, train: Path, val: Path) -> list[str]:
    lines = [line for line in (EXAMPLES / f"{name}.txt").read_text().splitlines() if line and not line.startswith("#")]
    out = []
    for line in lines:
        key = line.split("=", 1)[0]
        if key.startswith("generator.inference_engine."):
            continue
        if key == "data.train_data":
            line = f"data.train_data=['{train}']"
        elif key == "data.val_data":
            line = f"data.val_data=['{val}']"
        elif key in REPLACED:
            if REPLACED[key] is DROP:
                continue
            line = f"{key}={REPLACED[key]}"
        out.append(line)
    return ["skyrl.engine=jax", *out]


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("skyrl_data")
    train = write_parquet(tmp / "train.parquet", skyrl_rows(QUESTIONS, env_class=ENV))
    val = write_parquet(tmp / "validation.parquet", skyrl_rows(QUESTIONS[:4], env_class=ENV))
    return train, val


@pytest.fixture(scope="module")
def backend_and_tokenizer(data):
    from transformers import AutoTokenizer

    from rllm_sweeps.cachedir import cache_dir
    from rllm_sweeps.models import resolve_model_path
    from rllm_sweeps.training.jax_backend import make_jax_backend

    cfg = load_config(cpu_overrides("run_gsm8k", *data), notify=lambda _: None)
    settings = LoopSettings.from_config(cfg)
    model_dir = resolve_model_path(str(cfg.model.path), cache_dir())
    backend = make_jax_backend(model_dir, settings, max_lora_adapters=10)
    return backend, AutoTokenizer.from_pretrained(str(model_dir))


@pytest.mark.parametrize("name", SCRIPTS)
def test_skyrls_example_script_trains_two_steps_on_the_jax_engine_on_cpu(name, data, backend_and_tokenizer, tmp_path):
    from rllm_sweeps.data.task import job_task, job_workflow
    from rllm_sweeps.workflows import read_workflow

    backend, tokenizer = backend_and_tokenizer
    notes: list[str] = []
    cfg = load_config(cpu_overrides(name, *data), notify=notes.append)
    assert cfg.skyrl.engine == "jax" and cfg.rollout.n == 5  # the script's samples per prompt
    plain = OmegaConf.to_container(cfg, resolve=True)
    settings = LoopSettings.from_config(cfg)
    task = job_task(plain)
    workflow = read_workflow(job_workflow(plain.get("workflow"), plain)).build(task)
    model_id = f"{name}-{next(_adapters)}"
    trainer = RLTrainer(
        settings, backend, task, tokenizer, tmp_path, model_id=model_id, engine=JaxEngine().traits, workflow=workflow
    )
    steps: list[dict] = []
    trainer.hooks.on_step_end = steps.append
    trainer.fit()
    assert [m["step"] for m in steps] == [1, 2]
    assert all(m["tokens_sampled"] > 0 for m in steps)
    assert trainer.state.val_history and trainer.state.val_history[-1]["step"] == 2
    if settings.dynamic_sampling_type:  # DAPO: groups with a signal were kept
        assert all(m["dynamic_sampling_kept_groups"] == 4 for m in steps)
    if settings.use_kl_in_reward:  # RLOO, REINFORCE++: the KL penalty in the reward
        assert all("avg_kl" in m for m in steps)
    if settings.apply_overlong_filtering:
        # DAPO: the random tiny model never ends a reply (frac_stopped 0), so every reply is cut at the
        # length limit and the filter leaves no token to train on: what SkyRL does with such replies.
        assert all(m["overlong_filtered"] == 20 and m["tokens_trained"] == 0 for m in steps if m["frac_stopped"] == 0)
    else:  # an update with a gradient (GSPO: SkyRL's loss through the custom route)
        assert any(m["grad_norm"] > 0 for m in steps)
    for adapter in (model_id, trainer.policy.ref_model_id):  # free the slots for the next script
        if backend.has_model(adapter):
            backend.delete_model(adapter)
