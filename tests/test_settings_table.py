"""docs/CONFIG.md's table of SkyRL 0.4's algorithm and batch settings is the one the code generates
(rllm_sweeps/config/settings_table.py): it fails when either changes without the other."""

from __future__ import annotations

from pathlib import Path

import pytest

from rllm_sweeps.config.settings_table import DOC, MARK_BEGIN, MARK_END, setting_paths, table, with_table

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow  # composes one config per engine


def test_the_settings_table_in_config_md_is_the_generated_one():
    doc = (REPO / DOC).read_text()
    assert MARK_BEGIN in doc and MARK_END in doc
    assert with_table(doc, table()) == doc, "run: python -m rllm_sweeps.config.settings_table --write"


def test_the_table_has_every_algorithm_field_of_skyrl_and_the_batch_settings():
    from skyrl.train.config.config import AlgorithmConfig

    paths = setting_paths()
    for field in AlgorithmConfig.__dataclass_fields__:
        assert any(p == f"trainer.algorithm.{field}" or p.startswith(f"trainer.algorithm.{field}.") for p in paths)
    assert {"trainer.update_epochs_per_batch", "trainer.policy_mini_batch_size", "trainer.epochs"} <= set(paths)
