"""The planner's shortcuts give, job by job, what the full computation gives: a job's hashes
through its base's HashTemplate are config_hash of its composed config (and of the config
without the seed), and validation from the base reports what validating the whole config
reports. (tests/test_sweep_plan.py checks the composed configs against load_config().)"""

from __future__ import annotations

import itertools
import json

import pytest

from rllm_sweeps.config.cached_validation import CachedValidator
from rllm_sweeps.config.job_composer import JobComposer, Setting
from rllm_sweeps.config.native import quiet_skyrl
from rllm_sweeps.config.override_values import format_value
from rllm_sweeps.config.validate import check_common
from rllm_sweeps.jobhash import _not_hashed_tree, _without, config_hash
from rllm_sweeps.sweep.job_hashes import job_hashes, seed_paths, strip_seed

pytestmark = pytest.mark.slow  # composes the real config tree (Hydra, SkyRL)

SEED_KEY = "trainer.seed"


def settings(values: dict[str, object]) -> list[Setting]:
    return [Setting(key, value, format_value(value)) for key, value in values.items() if value is not None]


# Values of every kind the fast composition takes: floats, lists, strings, keys the hash leaves out
# (resources.*, trainer.experiment_name), interpolations OmegaConf evaluates again (resources.nodes,
# skyrl.engine), with and without a seed. 288 jobs.
HASHED = {
    "trainer.lr": [1e-4, 3e-4, 2.5e-5],
    "trainer.adam_betas": [[0.9, 0.999], [0.8, 0.99]],
    "algorithm.adv_estimator": ["grpo", "rloo"],
    "resources.nodes": [1, 2],
    "skyrl.engine": ["jax", "fsdp"],
    "trainer.experiment_name": ["a", "b"],
    SEED_KEY: [None, 0, 7],
}


def test_template_hashes_of_a_few_hundred_jobs_are_config_hash_of_their_composed_configs():
    composer = JobComposer()
    base = composer.base()
    jobs = [dict(zip(HASHED, values, strict=True)) for values in itertools.product(*HASHED.values())]
    hashes, texts = set(), set()
    for values in jobs:
        job_settings = settings(values)
        job = composer.job(base, job_settings, [s.override for s in job_settings], validate=False)
        assert job.plain is not None and job.changed is not None, values  # composed the fast way
        template = base.hash_template(job.changed)
        assert template is not None and base.hash_template(job.changed, seed_paths(SEED_KEY)) is not None
        canonical = json.dumps(_without(job.plain, _not_hashed_tree()), sort_keys=True, separators=(",", ":"))
        assert template.text(job.plain) == canonical
        expected = (config_hash(job.plain), config_hash(strip_seed(job.plain, SEED_KEY)))
        assert job_hashes(job.plain, job, base, SEED_KEY, point=True) == expected, values
        hashes.add(expected[0])
        texts.add(canonical)
    assert len(hashes) == len(texts) > len(jobs) // 4  # one hash per distinct hashed config


# Good and bad values: common rules, a cross rule (train_batch_size % mini_batch_size), SkyRL's
# types (a string lr), SkyRL's own validate_cfg (fsdp), the engine's keys, the JAX settings.
VALIDATED = {
    "trainer.lr": [3e-4, -1.0, "abc"],
    "rollout.n": [4, 0],
    "trainer.mini_batch_size": [2, 3],
    "skyrl.engine": ["jax", "fsdp"],
    "algorithm.use_kl_loss": [False, True],
    "skyrl.jax.max_lora_adapters": [None, "x"],
}


def test_validation_from_the_base_reports_what_validating_the_whole_config_reports():
    composer = JobComposer()
    base = composer.base()
    whole = CachedValidator()
    invalid = 0
    with quiet_skyrl():
        for values in itertools.product(*VALIDATED.values()):
            job_settings = settings(dict(zip(VALIDATED, values, strict=True)))
            job = composer.job(base, job_settings, [s.override for s in job_settings])
            assert job.plain is not None and job.changed is not None, values
            expected = whole.validate(job.plain, explicit={s.key for s in job_settings})  # no base: all of it
            assert sorted(map(str, job.issues)) == sorted(map(str, expected)), values
            common = check_common(job.plain)
            assert job.issues[: len(common)] == common  # the common rules' problems first, in their order
            invalid += bool(job.issues)
    assert 0 < invalid < 2 * 3 * 2 * 2 * 2 * 2
