"""SkyRL's GPU trainer (``SkyRLTrainBackend``) driven by the project's code as far as it runs on CPU.

The trainer's workers need CUDA and vLLM, which no machine here has (docs/JOBS.md says what has and
has not run). What does run here is SkyRL's real backend object: its constructor, its config
builder, and its ``sample`` call down to the HTTP client that would talk to the vLLM servers. These
tests put the project's own code (the rollout client, the job's overrides) in front of it.
"""

from __future__ import annotations

import asyncio

import pytest
from omegaconf import OmegaConf

from rllm_sweeps.config.load import load_config
from rllm_sweeps.config.native import quiet_skyrl
from rllm_sweeps.engines.skyrl_train import built_config, make_skyrl_train_backend

pytestmark = pytest.mark.slow  # builds SkyRL's GPU trainer config through SkyRL's own builders

GPU = ["skyrl.engine=fsdp", "resources.gpus_per_node=1", "resources.cpus_per_task=2", "model.lora.rank=8"]


def _backend_and_config(overrides: list[str], tmp_path, job_dir=None):
    from rllm_sweeps.cachedir import cache_dir
    from rllm_sweeps.models import resolve_model_path

    cfg = load_config([*GPU, *overrides], notify=lambda _: None)
    model_dir = resolve_model_path(str(cfg.model.path), cache_dir())
    tree = OmegaConf.to_container(cfg.skyrl.train, resolve=True)
    with quiet_skyrl():
        backend = make_skyrl_train_backend(str(cfg.skyrl.engine), tree, model_dir, job_dir or tmp_path / "job")
        built = built_config(backend, int(cfg.model.lora.rank), float(cfg.model.lora.alpha))
    return cfg, backend, built


class ScriptedVLLMClient:
    """Stands in for SkyRL's ``RemoteInferenceClient`` (the HTTP client of its vLLM servers) and
    nothing else: it answers each ``sample`` request with a fixed response, the end-of-turn token
    after a few letters. It proves the call pattern of the project's rollout path into SkyRL's real
    ``SkyRLTrainBackend.sample``, not vLLM."""

    def __init__(self, tokens: list[int]) -> None:
        self.tokens = tokens
        self.requests: list[dict] = []

    async def sample(self, payload: dict) -> dict:
        await asyncio.sleep(0)
        self.requests.append(payload["json"])
        return {"sequences": [{"tokens": self.tokens, "logprobs": [-0.5] * len(self.tokens), "stop_reason": "stop"}]}

    async def aclose(self) -> None:
        pass


def _ready_to_sample(backend, built, client: ScriptedVLLMClient) -> None:
    """The state ``create_model`` + ``save_sampler_checkpoint`` leave a colocated LoRA backend in
    (policy registered, engines up and awake, the adapter's signature pinned), without the
    workers and vLLM servers that need CUDA."""
    backend._cfg = built
    backend._model_ids_to_role = {"policy": "policy"}
    backend._base_lora_signature = (
        int(built.trainer.policy.model.lora.rank),
        int(built.trainer.policy.model.lora.alpha),
    )
    backend._inference_engine_client = client
    backend._inference_engines_initialized = True
    backend._engines_sleep_level = None


def test_rollout_path_samples_through_skyrl_train_backends_own_event_loop(tmp_path):
    """SkyRLTrainBackend.sample runs asyncio.run itself; the rollout client must call it off its loop."""
    from transformers import AutoTokenizer

    from rllm_sweeps.tasks import load_task
    from rllm_sweeps.workflows.chat import ChatFormat, stop_token_ids
    from rllm_sweeps.workflows.client import RolloutClient, Sampling, SeedPlan
    from rllm_sweeps.workflows.rollout import run_episodes
    from rllm_sweeps.workflows.single_turn import SingleTurnSettings, SingleTurnWorkflow

    cfg, backend, built = _backend_and_config([], tmp_path)
    tokenizer = AutoTokenizer.from_pretrained(backend.base_model)
    stops = stop_token_ids(tokenizer)
    client_http = ScriptedVLLMClient(tokenizer.encode("aaa") + [stops[0]])
    _ready_to_sample(backend, built, client_http)
    task = load_task(cfg.task)
    examples, n = task.train[:2], 2
    client = RolloutClient(
        backend,
        "policy",
        ("step000000-1", tmp_path / "sampler.tar"),
        stops,
        Sampling(temperature=1.0, top_p=1.0, top_k=-1, max_tokens=8),
        SeedPlan(seed=0, stream=0, step=0, episodes=len(examples) * n),
    )
    episodes = run_episodes(
        SingleTurnWorkflow(task, SingleTurnSettings()),
        examples,
        n,
        client,
        ChatFormat(tokenizer, task.chat_template),
        first_task_index=0,
        max_prompt_length=int(cfg.data.max_prompt_length),
        max_response_length=8,
    )
    assert client.failure is None
    assert len(episodes) == 4 and client.sample_calls == 1
    assert len(client_http.requests) == 4
    assert {r["model"] for r in client_http.requests} == {"policy"}  # the adapter SkyRL registers on vLLM
    for e, example in zip(episodes, [x for x in examples for _ in range(n)], strict=True):
        (traj,) = e.trajectories
        assert traj.steps[0].response_ids == client_http.tokens
        assert traj.steps[0].logprobs == [-0.5] * len(client_http.tokens)
        assert traj.reward == task.reward_fn(example["prompt"], traj.steps[0].response_text, example["ground_truth"])


def _path_leaves(built) -> dict[str, str]:
    """Every absolute path SkyRL's built config holds, by key (the model's directory aside)."""
    from skyrl.train.config import get_config_as_yaml_str

    from rllm_sweeps.plain_tree import leaves

    tree = OmegaConf.to_container(OmegaConf.create(get_config_as_yaml_str(built)))
    model = str(built.trainer.policy.model.path)
    found = {}
    for key, value in leaves(tree):
        for v in value if isinstance(value, list) else [value]:
            if isinstance(v, str) and v.startswith(("/", "~")) and v != model:
                found[key] = v
    return found


def test_two_jobs_give_skyrl_no_path_in_common_and_each_its_own_job_directory(tmp_path):
    """LoRA sync, logs, exports, SkyRL's checkpoints: in each job's directory, never SkyRL's machine-wide
    defaults (two jobs on one node would read each other's adapter from /tmp/skyrl_lora_sync/policy)."""
    from rllm_sweeps.records.layout import JobPaths

    paths = {}
    for job in ("job-a", "job-b"):
        _, _, built = _backend_and_config([], tmp_path, job_dir=tmp_path / job)
        paths[job] = _path_leaves(built)
    a, b = paths["job-a"], paths["job-b"]
    for key in ("trainer.policy.model.lora.lora_sync_path", "trainer.log_path", "trainer.export_path"):
        assert a[key].startswith(str(JobPaths(tmp_path / "job-a").skyrl) + "/"), key
    # Data files are SkyRL's own generator's (the loop's data comes from task.*): not written by a job.
    written = {k for k in a if not k.startswith(("data.", "environment."))}
    assert written and not {a[k] for k in written} & {b[k] for k in written}


def test_skyrls_trainer_computes_logprobs_at_the_sampling_temperature_and_vllm_returns_them_processed(tmp_path):
    """The loop trains on the sampler's log-probabilities as the old policy's; SkyRL's trainer computes
    the new ones at trainer.algorithm.temperature: both must be at the sampling temperature."""
    overrides = ["rollout.train.temperature=0.7", "algorithm.eps_clip=0.3"]  # eps_clip: algorithm is overridden
    _, _, built = _backend_and_config(overrides, tmp_path)
    assert built.generator.sampling_params.temperature == 0.7
    assert built.trainer.algorithm.temperature == 0.7
    assert built.generator.inference_engine.engine_init_kwargs["logprobs_mode"] == "processed_logprobs"
