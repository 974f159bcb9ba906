"""The plan: every job composed and validated before anything runs, fast, and equal to
what the single-job pipeline (load_config) gives. No training here."""

from __future__ import annotations

import json
import time

import pytest
from omegaconf import OmegaConf

from rllm_sweeps.config.job_composer import JobComposer, Setting
from rllm_sweeps.config.load import load_config
from rllm_sweeps.config.native import quiet_skyrl
from rllm_sweeps.config.override_values import parse_value
from rllm_sweeps.jobhash import config_hash
from rllm_sweeps.keymap import BY_NATIVE
from rllm_sweeps.problems import ConfigError
from rllm_sweeps.records.layout import PLAN_FILE
from rllm_sweeps.records.model import dump
from rllm_sweeps.records.plan import PLAN_SCHEMA_VERSION
from rllm_sweeps.sweep.parse_cli import SWEEP_DIR
from rllm_sweeps.sweep.planner import make_plan, plan_sweep
from rllm_sweeps.sweep.spec import SweepError, SweepSpec

pytestmark = pytest.mark.slow  # plans compose and validate real configs (Hydra, SkyRL)


def quiet(_: str) -> None:
    pass


# ---- zip x seeds, the example file, random --------------------------------------------------


def test_zip_of_two_keys_with_two_values_crossed_with_two_seeds_is_four_jobs():
    spec = SweepSpec.from_dict(
        {
            "parameters": {"trainer.lr": {"values": [1e-3, 3e-3]}, "rollout.n": {"values": [4, 8]}},
            "zip": [["trainer.lr", "rollout.n"]],
            "seeds": 2,
        }
    )
    plan = make_plan(spec)
    assert plan.totals.jobs == 4 and plan.totals.points == 2 and plan.complete
    assert [j.overrides for j in plan.jobs] == [
        ["trainer.lr=0.001", "rollout.n=4", "trainer.seed=0"],
        ["trainer.lr=0.001", "rollout.n=4", "trainer.seed=1"],
        ["trainer.lr=0.003", "rollout.n=8", "trainer.seed=0"],
        ["trainer.lr=0.003", "rollout.n=8", "trainer.seed=1"],
    ]
    point_ids = [j.point_id for j in plan.jobs]
    assert point_ids[0] == point_ids[1] != point_ids[2] == point_ids[3]
    assert [j.seed for j in plan.jobs] == [0, 1, 0, 1]
    assert [j.point_index for j in plan.jobs] == [0, 0, 1, 1]
    assert len({j.config_hash for j in plan.jobs}) == 4
    assert all(
        j.params == {"trainer.lr": j.params["trainer.lr"], "rollout.n": j.params["rollout.n"]} for j in plan.jobs
    )


def test_example_sweep_file_expands_to_exactly_the_expected_jobs():
    plan = plan_sweep(["+sweep=example"])
    # trainer.lr x zip(batch, mini batch) x rollout.n, minus rollout.n * batch > 128, x seeds 0, 1.
    expected_points = [
        ("0.001", 8, 2, 4),
        ("0.001", 8, 2, 8),
        ("0.001", 16, 4, 4),
        ("0.001", 16, 4, 8),
        ("0.001", 32, 8, 4),
        ("0.003", 8, 2, 4),
        ("0.003", 8, 2, 8),
        ("0.003", 16, 4, 4),
        ("0.003", 16, 4, 8),
        ("0.003", 32, 8, 4),
    ]
    expected = [
        [
            f"trainer.lr={lr}",
            f"data.train_batch_size={batch}",
            f"trainer.mini_batch_size={mini}",
            f"rollout.n={n}",
            "trainer.total_batches=20",
            f"trainer.seed={seed}",
        ]
        for lr, batch, mini, n in expected_points
        for seed in (0, 1)
    ]
    assert [j.overrides for j in plan.jobs] == expected
    assert (plan.totals.points, plan.totals.jobs, plan.totals.dropped, plan.totals.candidates) == (10, 20, 2, 12)
    assert plan.spec.parallel == 2
    assert len({j.point_id for j in plan.jobs}) == 10


def test_random_plan_is_reproducible_and_in_bounds():
    first = plan_sweep(["+sweep=lr_random"])
    again = plan_sweep(["+sweep=lr_random"])
    assert first.totals.jobs == 20
    assert [j.overrides for j in first.jobs] == [j.overrides for j in again.jobs]
    assert [j.config_hash for j in first.jobs] == [j.config_hash for j in again.jobs]
    assert all(1e-4 <= j.params["trainer.lr"] <= 1e-2 for j in first.jobs)
    other = plan_sweep(["+sweep=lr_random", "sweep.seed=1"])
    assert [j.overrides for j in other.jobs] != [j.overrides for j in first.jobs]


@pytest.mark.parametrize("name", sorted(p.stem for p in SWEEP_DIR.glob("*.yaml")))
def test_every_shipped_sweep_file_plans_cleanly(name):
    plan = plan_sweep([f"+sweep={name}"])
    assert plan.jobs and plan.totals.validated == len(plan.jobs)
    if plan.spec.method != "optuna":  # Optuna's trials are asked as results arrive: examples only
        assert plan.complete and plan.totals.jobs == len(plan.jobs)


def test_plan_matches_hydra_basic_sweeper():
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    args = ["trainer.lr=1e-4,3e-4", "rollout.n=range(2,6,2)", "trainer.total_batches=5", "task=toy_letters"]
    (batch,) = BasicSweeper.split_arguments(OverridesParser.create().parse_overrides(args), max_batch_size=None)
    plan = plan_sweep(args)
    assert [sorted(j.overrides) for j in plan.jobs] == [sorted(job) for job in batch]


# ---- the fast path is the full composition ---------------------------------------------------


CASES = [
    ([], ["trainer.lr=0.0003", "rollout.n=4"]),
    (["trainer.total_batches=5"], ["algorithm.adv_estimator=rloo", "trainer.logger=[console,tensorboard]"]),
    ([], ["trainer.adam_betas=[0.8,0.9]", "rollout.train.temperature=0.7", "skyrl.jax.max_lora_adapters=8"]),
    ([], ["skyrl.engine=fsdp", "resources.gpus_per_node=1", "skyrl.train.trainer.strategy=fsdp"]),
    (["task=toy_letters"], ["data.train_batch_size=64", "model.lora.rank=16", "trainer.seed=3"]),
    # the exact path: a native key of the key map, a dict, an interpolation, a new key
    ([], ["skyrl.train.trainer.policy.optimizer_config.lr=0.002"]),
    ([], ["model.lora={rank:4}"]),
    ([], ["trainer.experiment_name=run_${trainer.lr}"]),
    ([], ["+task.extra=3"]),  # a `+` key of the common sections is refused (nothing reads it)
]


def settings(lines: list[str]) -> list[Setting]:
    out = []
    for line in lines:
        prefix = "+" if line.startswith("+") else ""
        key, text = line.lstrip("+").split("=", 1)
        out.append(Setting(key, parse_value(text), text, prefix))
    return out


@pytest.mark.parametrize(("base", "job"), CASES)
def test_fast_composition_equals_full_composition(base, job):
    composer = JobComposer(base)
    with quiet_skyrl():
        got = composer.job(composer.base(()), settings(job), base + job)
    expected = OmegaConf.to_container(load_config(base + job, notify=quiet), resolve=True)
    assert got.issues == []
    assert got.plain == expected
    assert config_hash(got.plain) == config_hash(expected)
    native_of_the_map = any(line.split("=", 1)[0] in BY_NATIVE for line in job)  # reconciliation
    simple = not native_of_the_map and not any(k in " ".join(job) for k in ("{", "${", "+"))
    assert got.exact_path is not simple


BAD = [
    ["trainer.lr=-1"],
    ["trainer.lr=abc", "rollout.n=0"],
    ["skyrl.train.trainer.strategy=deepspeed"],
    ["data.train_batch_size=30", "trainer.mini_batch_size=4"],
    # fsdp's reference workers: one on each of the policy's GPUs (config/gpu_trainer_rules.py)
    ["skyrl.engine=fsdp", "resources.gpus_per_node=2", "resources.cpus_per_task=3", "algorithm.use_kl_loss=true"],
    ["skyrl.train.trainer.algorithm.use_entropy_loss=true"],  # refused on jax (setting_effect.py)
    # SkyRL's validate_cfg: colocation (2 GPUs, 1 engine set explicitly)
    ["skyrl.engine=fsdp", "resources.gpus_per_node=2", "skyrl.train.generator.inference_engine.num_engines=1"],
    ["skyrl.jax.max_lora_adapters=x"],
    ["algorithm.adv_estimator=foo", "skyrl.train.trainer.epochs=many"],
    ["skyrl.engine=fsdp"],
    ["workflow.max_turns=3"],  # the workflow's own checks (the single-turn workflow makes one call)
]


@pytest.mark.parametrize("job", BAD)
def test_fast_validation_reports_what_load_config_reports(job):
    composer = JobComposer([])
    with quiet_skyrl():
        got = composer.job(composer.base(()), settings(job), job)
    with pytest.raises(ConfigError) as info:
        load_config(job, notify=quiet)
    assert sorted(map(str, got.issues)) == sorted(map(str, info.value.issues))


@pytest.mark.parametrize(
    "args",
    [
        # fast jobs that evaluate resolvers on the shared base, and exact ones (an interpolated value) after them
        ["algorithm.adv_estimator=grpo,rloo", "trainer.experiment_name=plain,'run_${trainer.lr}'", "++sweep.seeds=2"],
        # a SkyRL-native base override: reconciliation, every job the exact way
        ["trainer.lr=1e-4,3e-4", "skyrl.train.trainer.algorithm.eps_clip_high=0.3"],
        # a config-group dimension and a fixed value
        ["task=toy_letters", "rollout.n=2,4", "trainer.total_batches=7"],
    ],
)
def test_planned_hashes_are_what_each_job_composes_to(args):
    plan = plan_sweep(args)
    for job in plan.jobs:
        cfg = load_config(job.overrides, notify=quiet)
        assert config_hash(cfg) == job.config_hash, job.overrides
        assert dump(job.resources) == OmegaConf.to_container(cfg.resources, resolve=True)


# ---- errors: all at once, each named ----------------------------------------------------------


def test_every_bad_job_is_reported_at_once_with_its_overrides():
    with pytest.raises(SweepError) as info:
        plan_sweep(["trainer.lr=-1,1e-3", "rollout.n=0,4"])
    message = str(info.value)
    assert "3 of 4 jobs are invalid" in message
    assert "job 0 [trainer.lr=-1 rollout.n=0]: trainer.lr=-1 is invalid" in message
    assert "job 0 [trainer.lr=-1 rollout.n=0]: rollout.n=0 is invalid" in message
    assert "job 1 [trainer.lr=-1 rollout.n=4]" in message and "job 2 [trainer.lr=0.001 rollout.n=0]" in message
    assert "job 3" not in message


def test_unknown_keys_name_the_file_or_the_override_with_a_suggestion(tmp_path):
    path = tmp_path / "keys.yaml"
    path.write_text(
        "parameters:\n  trainer.lrr: {values: [1.0e-4, 3.0e-4]}\n"
        "constraints: ['rollout.n * data.train_batch_sze <= 512']\n"
    )
    with pytest.raises(SweepError) as info:
        plan_sweep([f"+sweep={path}", "rollout.nn=2,4", "trainer.totl_batches=5"])
    message = str(info.value)
    assert "keys.yaml: parameters.trainer.lrr: unknown key 'trainer.lrr'; did you mean 'trainer.lr'" in message
    assert (
        "keys.yaml: constraints[0]: constraint 'rollout.n * data.train_batch_sze <= 512' names 'data.train_batch_sze'"
        in message
    )
    assert "override 'rollout.nn=2,4': unknown key 'rollout.nn'; did you mean 'rollout.n'" in message
    assert "override 'trainer.totl_batches=5': unknown key 'trainer.totl_batches'" in message


def test_a_plan_left_empty_by_its_constraints_is_an_error(tmp_path):
    path = tmp_path / "empty.yaml"
    path.write_text(
        "parameters:\n  rollout.n: {values: [4, 8]}\nconstraints: ['rollout.n * data.train_batch_size < 64']\n"
    )
    with pytest.raises(
        SweepError, match=r"the constraints drop all 2 points: 'rollout.n \* data.train_batch_size < 64'"
    ):
        plan_sweep([f"+sweep={path}"])


def test_constraints_read_the_composed_config():
    # data.train_batch_size is not swept (read from the config); the native key is an interpolation.
    plan = plan_sweep(
        [
            "rollout.n=2,4,8,16",
            '+sweep.constraints=["skyrl.train.generator.n_samples_per_prompt * data.train_batch_size <= 256"]',
        ]
    )
    assert [j.params["rollout.n"] for j in plan.jobs] == [2, 4, 8]


def test_a_grid_larger_than_its_budget_is_refused():
    with pytest.raises(SweepError, match="the grid has 6 jobs .* more than the budget of 4"):
        plan_sweep(["+sweep=lr_grid", "+sweep.budget=4"])


def test_an_optuna_plan_validates_sampled_examples_up_front_and_leaves_the_trials_to_the_search():
    spec = SweepSpec.from_dict(
        {
            "method": "optuna",
            "budget": 8,
            "seeds": 2,
            "parameters": {"trainer.lr": {"distribution": "uniform", "min": 0.1, "max": 1}},
        }
    )
    plan = make_plan(spec)
    assert not plan.complete and plan.totals.points == 4 and plan.totals.jobs == 8
    assert len(plan.jobs) == 3 * 2 and plan.totals.validated == 6  # 3 sampled points x 2 seeds
    assert "the rows below are those examples, not the trials Optuna will ask" in plan.render()


# ---- totals, cost, plan.json, the dry run ------------------------------------------------------


def test_preview_composes_and_hashes_without_validating():
    full = plan_sweep(["+sweep=example"], limit=4)
    preview = plan_sweep(["+sweep=example"], limit=4, validate=False)
    assert [j.config_hash for j in preview.jobs] == [j.config_hash for j in full.jobs]
    assert preview.totals.validated == 0 and "validated none yet" in preview.render()
    assert full.totals.validated == 4 and preview.totals.jobs == full.totals.jobs == 20


def test_a_dry_run_plans_once_its_preview_then_the_same_jobs_validated():
    """The dry run's table comes before SkyRL's validators load, from the one planning."""
    seen = []
    plan = plan_sweep(["+sweep=example", "rollout.n=4,4"], limit=4, preview=seen.append)  # jobs 2, 3 repeat 0, 1
    (preview,) = seen
    assert preview.totals.validated == 0 and "validated none yet" in preview.render()
    assert plan.totals.validated == 4 and [j.config_hash for j in plan.jobs] == [j.config_hash for j in preview.jobs]
    alone = plan_sweep(["+sweep=example", "rollout.n=4,4"], limit=4)
    assert plan.notes == alone.notes and any("2 job(s) repeat" in n for n in plan.notes)  # nothing counted twice


def test_cost_estimate_from_each_jobs_resources():
    args = [
        "resources.nodes=1,2",
        "resources.time_min=30,90",
        "skyrl.engine=fsdp",
        "resources.gpus_per_node=4",
        "skyrl.train.trainer.placement.colocate_all=false",
    ]
    plan = plan_sweep(args)
    # nodes x minutes: 1x30 + 1x90 + 2x30 + 2x90 = 360 node-minutes; x 5 GPUs per node: the policy's 4
    # and, not colocated, the GPU of SkyRL's one vLLM engine (on 2 nodes, a node's share rounded up).
    assert plan.totals.node_hours == pytest.approx(6.0)
    assert plan.totals.gpu_hours == pytest.approx(30.0)
    partial = plan_sweep(args, limit=1)  # the dry-run path reads resources without composing
    assert not partial.complete and partial.totals.validated == 1
    assert (partial.totals.node_hours, partial.totals.gpu_hours) == (plan.totals.node_hours, plan.totals.gpu_hours)
    assert "6.0 node-hours, 30.0 GPU-hours" in plan.render()


def test_plan_json_has_the_spec_totals_and_every_job(tmp_path):
    plan = plan_sweep(["+sweep=example"])
    path = plan.write(tmp_path)
    assert path == tmp_path / PLAN_FILE
    data = json.loads(path.read_text())
    assert data["complete"] is True and data["totals"]["jobs"] == 20 == len(data["jobs"])
    assert data["spec"] == plan.spec.to_dict() and SweepSpec.from_dict(data["spec"]).to_dict() == data["spec"]
    assert data["jobs"][3] == dump(plan.jobs[3])


def test_plan_json_states_the_metrics_the_seed_key_and_the_swept_keys(tmp_path):
    """What the report needs, written by the planner: the report never reads the DSL again."""
    plan = plan_sweep(["+sweep=example", "sweep.metric.goal=minimize"], limit=2, validate=False)
    data = json.loads(plan.write(tmp_path).read_text())
    assert data["schema_version"] == PLAN_SCHEMA_VERSION == 3
    assert data["metrics"] == [{"name": "val_reward_mean", "goal": "minimize"}]
    assert data["seed_key"] == "trainer.seed"
    # The fixed trainer.total_batches is no swept key, nor is the seed.
    assert data["swept"] == ["trainer.lr", "data.train_batch_size", "trainer.mini_batch_size", "rollout.n"]


@pytest.mark.timed
def test_dry_run_of_a_100000_point_grid_takes_under_3_seconds():
    plan_sweep(["trainer.lr=1e-4"])  # imports (SkyRL, JAX: seconds, once per process) are not the plan's
    lrs = ",".join(f"{(i + 1) * 1e-6:.6g}" for i in range(1000))
    args = [f"trainer.lr={lrs}", "rollout.n=range(1,11)", "data.max_response_length=range(1,11)"]
    start = time.perf_counter()
    plan = plan_sweep(args, limit=20)
    text = plan.render(rows=20)
    elapsed = time.perf_counter() - start
    assert elapsed < 3, f"{elapsed:.2f} s"
    assert plan.totals.jobs == 100_000 and plan.totals.validated == 20 and not plan.complete
    assert plan.totals.node_hours == pytest.approx(100_000)
    assert "100,000 jobs" in text and "the first 20 of 100,000 jobs" in text
    assert text.count("trainer.lr=1e-06 rollout.n=") == 20
    # With a constraint every point is still counted (read from the values, not composed).
    start = time.perf_counter()
    constrained = plan_sweep(args + ['+sweep.constraints=["rollout.n * data.max_response_length <= 20"]'], limit=20)
    elapsed = time.perf_counter() - start
    assert elapsed < 3, f"{elapsed:.2f} s"
    per_lr = sum(1 for n in range(1, 11) for m in range(1, 11) if n * m <= 20)
    assert constrained.totals.jobs == 1000 * per_lr


@pytest.mark.timed
def test_planning_1000_jobs_composes_and_validates_each_in_a_few_seconds():
    plan_sweep(["trainer.lr=1e-4"])
    lrs = ",".join(f"{(i + 1) * 1e-5:.6g}" for i in range(125))
    start = time.perf_counter()
    plan = plan_sweep([f"trainer.lr={lrs}", "rollout.n=1,2,4,8", "trainer.mini_batch_size=2,4"])
    elapsed = time.perf_counter() - start
    assert plan.totals.validated == 1000 and len({j.config_hash for j in plan.jobs}) == 1000
    assert elapsed < 10, f"{elapsed:.2f} s"  # ~2 s on 2 cores; Hydra's BasicSweeper alone: ~100 s


# ---- plans of any size: streamed to disk, progress, refused above max_jobs ------------------


@pytest.mark.timed
def test_a_run_above_max_jobs_is_refused_before_any_job_is_composed_saying_how_to_sample_it():
    args = ["trainer.lr=range(1,1001)", "rollout.n=range(1,1001)", "data.max_response_length=range(1,1001)"]
    start = time.perf_counter()
    with pytest.raises(SweepError) as err:
        plan_sweep(args, max_jobs=100_000)
    elapsed = time.perf_counter() - start
    message = str(err.value)
    assert "1,000,000,000 points" in message and "hydra.sweeper.max_jobs=100,000" in message
    assert "sweep.method=random sweep.budget=N" in message and "sweep.method=optuna sweep.budget=N" in message
    assert elapsed < 5, f"{elapsed:.2f} s"  # nothing composed but the base
    # A dry run of the same grid is a preview: the first jobs, counted in full.
    preview = plan_sweep(args, limit=5, max_jobs=100_000)
    assert preview.totals.jobs == 10**9 and len(preview.jobs) == 5
    # A random search over the same values is no grid: its budget is what it plans.
    sampled = plan_sweep([*args, "sweep.method=random", "sweep.budget=4"], max_jobs=100_000)  # as the message says
    assert sampled.totals.jobs == 4 and sampled.complete


def test_a_runs_plan_is_streamed_to_disk_and_equals_the_in_memory_plan_with_progress_reported():
    from rllm_sweeps.sweep.spool import JobSpool

    args = ["trainer.lr=1e-4,2e-4,3e-4", "rollout.n=2,4", "+sweep.seeds=2"]
    heard: list[tuple[int, int]] = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("rllm_sweeps.sweep.planner.PROGRESS_EVERY_S", 0.0)
        streamed = plan_sweep(args, progress=lambda done, total, s: heard.append((done, total)))
    preview = plan_sweep(args, limit=100)  # a preview's jobs are kept in memory
    assert isinstance(streamed.jobs, JobSpool) and isinstance(preview.jobs, list)
    assert [dump(j) for j in streamed.jobs] == [dump(j) for j in preview.jobs]
    assert len(streamed.jobs) == 12 and streamed.jobs[7] == preview.jobs[7] and streamed.jobs[-1] == preview.jobs[11]
    assert heard[0] == (0, 12) and heard[-1] == (12, 12)
    assert streamed.resource_shapes == [preview.jobs[0].resources]


def test_plan_json_streamed_from_disk_loads_as_the_plans_dict(tmp_path):
    plan = plan_sweep(["trainer.lr=1e-4,2e-4", "rollout.n=2,4"])
    path = plan.write(tmp_path)
    assert json.loads(path.read_text()) == json.loads(json.dumps(plan.to_dict(), default=str))


# ---- a planned job is not validated again by its own pre-flight check ------------------------


def test_a_planned_jobs_command_passes_its_preflight_without_composing_again_and_any_other_is_checked(
    tmp_path, monkeypatch
):
    from launchers.local import LocalLauncher
    from rllm_sweeps import app
    from rllm_sweeps.app_command import MODULE_PROGRAM
    from rllm_sweeps.config import load
    from rllm_sweeps.records.launch import LAUNCH_ENV
    from rllm_sweeps.records.plan import Metric
    from rllm_sweeps.sweep.runner import JobToRun, StaticSource, SweepRunner, job_dir_for

    plan = plan_sweep(["+sweep=example"])
    runner = SweepRunner(StaticSource(plan, tmp_path), tmp_path, LocalLauncher(), 1, metric=Metric())
    job = plan.jobs[3]
    request = runner.request(JobToRun(job, job_dir_for(tmp_path, job)))
    composed = []
    monkeypatch.setattr(load, "load_config", lambda *a, **k: composed.append(a))
    # what train.py does with the command: canonical spellings, then the pre-flight check
    argv = app.command_line(request.argv[1 + len(MODULE_PROGRAM) :], notify=quiet)  # python -m rllm_sweeps ARGS
    monkeypatch.setenv(LAUNCH_ENV, request.env[LAUNCH_ENV])
    app.preflight(argv)
    assert composed == []  # the planner validated exactly these overrides
    app.preflight([*argv, "trainer.lr=0.5"])  # not what was planned: checked as always
    assert len(composed) == 1
    monkeypatch.delenv(LAUNCH_ENV)
    app.preflight(argv)  # the same command typed by hand
    assert len(composed) == 2


@pytest.mark.parametrize(
    ("swept", "given", "why"),
    [
        ("rollout.val.top_p=0.5,0.9", [], "validation is greedy (rollout.val.temperature=0)"),
        ("algorithm.eps_clip=0.1,0.2", ["algorithm.loss_fn=importance_sampling"], "policy loss has no clip"),
        ("algorithm.eps_clip_high=0.2,0.3", ["algorithm.loss_fn=importance_sampling"], "policy loss has no clip"),
    ],
)
def test_a_sweep_over_greedy_validations_top_p_or_the_clip_of_an_unclipped_loss_is_refused_as_identical_jobs(
    swept, given, why
):
    with pytest.raises(SweepError) as err:
        plan_sweep([swept, *given], limit=4)
    assert f"a sweep over {swept.partition('=')[0]} runs identical jobs" in str(err.value) and why in str(err.value)


def test_the_same_sweeps_run_where_validation_samples_and_the_loss_clips():
    for args in (["rollout.val.top_p=0.5,0.9", "rollout.val.temperature=0.7"], ["algorithm.eps_clip=0.1,0.2"]):
        assert len(plan_sweep(args, limit=4).jobs) == 2
