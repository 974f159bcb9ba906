"""Datasets by path, without training: the format told from the columns, rows read as examples, the
environments' rewards (real skyrl-gym environments), and the pre-launch checks of bad input."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from data_files import (
    plain_rows,
    rllm_rows,
    rllm_verl_copy_rows,
    skyrl_rows,
    verl_rows,
    write_jsonl,
    write_parquet,
)

from rllm_sweeps.data.check import check
from rllm_sweeps.data.environments import DataEnvironments, env_problem
from rllm_sweeps.data.files import DataFile, Examples
from rllm_sweeps.data.formats import DataFormat, FormatError, detect
from rllm_sweeps.data.settings import DataSettings

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    ("rows", "fmt"),
    [
        (skyrl_rows, DataFormat.SKYRL),
        (verl_rows, DataFormat.VERL),
        (rllm_rows, DataFormat.RLLM),
        (plain_rows, DataFormat.PLAIN),
    ],
)
def test_the_format_is_told_from_the_columns_and_every_format_reads_as_the_same_example(tmp_path, rows, fmt):
    f = DataFile.open(str(write_parquet(tmp_path / "d.parquet", rows())))
    assert f.spec.format is fmt
    assert f.describe() == f"{tmp_path / 'd.parquet'}: {fmt.value} format, 8 rows"
    example = f.example(1, default_env="gsm8k")
    content = example["prompt"] if isinstance(example["prompt"], str) else example["prompt"][-1]["content"]
    assert content == "What is 7 times 6?" and example["ground_truth"] == "42"
    assert example["env_class"] == "gsm8k" and example["extras"]["reward_spec"]["ground_truth"] == "42"


def test_skyrl_rows_pass_their_other_columns_to_the_environment_as_skyrls_generator_does(tmp_path):
    f = DataFile.open(str(write_parquet(tmp_path / "d.parquet", skyrl_rows(env_class="gsm8k_multi_turn"))))
    example = f.example(0, default_env="gsm8k")
    assert example["env_class"] == "gsm8k_multi_turn"  # the row's own env_class wins over environment.env_class
    assert set(example["extras"]) >= {"data_source", "reward_spec", "extra_info"}
    assert "prompt" not in example["extras"] and "env_class" not in example["extras"]


def test_rllms_verl_copy_is_read_from_its_extra_info(tmp_path):
    f = DataFile.open(str(write_parquet(tmp_path / "d_verl.parquet", rllm_verl_copy_rows())))
    assert f.rllm_copy and "rLLM's verl copy" in f.describe()
    example = f.example(2, default_env="gsm8k")
    assert example["prompt"] == "Ann had 10 pens and lost 4. How many are left?" and example["ground_truth"] == "6"
    assert next(f.prompts())[2] == example["prompt"]


def test_jsonl_reads_like_parquet(tmp_path):
    f = DataFile.open(str(write_jsonl(tmp_path / "d.jsonl", skyrl_rows())))
    assert f.spec.format is DataFormat.SKYRL and f.example(1, "gsm8k")["ground_truth"] == "42"


@pytest.mark.parametrize(
    ("columns", "missing"),
    [
        ({"prompt", "data_source"}, "'reward_spec'"),
        ({"question"}, "'ground_truth'"),
        ({"text", "label"}, "no 'prompt' or 'question' column (got label, text)"),
    ],
)
def test_columns_of_no_format_are_refused_naming_what_is_missing(columns, missing):
    with pytest.raises(FormatError, match=re.escape(missing)):
        detect(columns)


def test_a_split_over_several_files_leaves_out_the_dropped_rows_and_reads_rows_on_demand(tmp_path):
    a = DataFile.open(str(write_parquet(tmp_path / "a.parquet", skyrl_rows()[:3])))
    b = DataFile.open(str(write_parquet(tmp_path / "b.parquet", rllm_rows()[3:])))
    examples = Examples([a, b], np.array([0, 2, 3, 7]), "gsm8k")
    assert len(examples) == 4
    assert [e["ground_truth"] for e in examples] == ["5", "6", "17", "16"]


def test_the_gsm8k_environment_scores_a_row_of_each_format():
    envs = DataEnvironments("gsm8k")
    for rows in (skyrl_rows, verl_rows, rllm_rows, plain_rows):
        from rllm_sweeps.data.formats import BY_FORMAT, detect, to_example

        row = rows()[1]
        example = to_example(detect(set(row)), row, "gsm8k")
        assert envs.reward(example, "6 x 7 = 42 #### 42") == 1.0
        assert envs.reward(example, "#### 41") == 0.0
    assert BY_FORMAT


def test_aime_reads_its_ground_truth_from_reward_model_which_every_format_fills():
    from rllm_sweeps.data.formats import detect, to_example

    for row in (skyrl_rows(env_class=None)[1], rllm_rows()[1]):  # rows without an env_class: environment.env_class
        example = to_example(detect(set(row)), row, "aime")
        assert DataEnvironments("aime").reward(example, "Answer: 42") == 1.0


def test_every_registered_environment_is_accepted_by_name_and_refused_only_without_what_it_reads():
    import skyrl_gym

    met = {"text2sql": {"db_path": str(REPO / "tests")}, "search": {"search_url": "http://127.0.0.1:1/retrieve"}}
    assert {e: env_problem(e, met) for e in skyrl_gym.registry} == dict.fromkeys(skyrl_gym.registry)
    assert env_problem("tests.probes.data_env:ReplyEnv") is None
    assert "unknown env_class 'gsm9k'" in env_problem("gsm9k")
    # What each reads is derived from its env_config's fields: a directory (``*_path``), a server (``*_url``).
    assert env_problem("text2sql") == (
        "env_class 'text2sql' reads environment.skyrl_gym.text2sql.db_path, which is not set: set it to a directory"
    )
    assert env_problem("text2sql", {"text2sql": {"db_path": "/no/such/dir"}}) == (
        "env_class 'text2sql' reads environment.skyrl_gym.text2sql.db_path='/no/such/dir', which is not a "
        "directory: set it to the directory the environment reads"
    )
    assert env_problem("search", {"search": {"search_url": ""}}) == (
        "env_class 'search' reads environment.skyrl_gym.search.search_url, which is not set: set it to the server's URL"
    )
    assert "not a skyrl_gym BaseTextEnv" in env_problem("rllm_sweeps.tasks.toy:letters_reward")


def _settings(train, val, env_class="gsm8k") -> DataSettings:
    return DataSettings(tuple(map(str, train)), tuple(map(str, val)), env_class, "{}", 256, "builtin:tiny-qwen3")


def test_every_bad_input_is_reported_at_once_naming_its_file_row_or_column(tmp_path):
    missing = tmp_path / "missing.parquet"
    text = tmp_path / "notes.txt"
    text.write_text("x")
    garbage = tmp_path / "garbage.parquet"
    garbage.write_bytes(b"not parquet at all")
    no_truth = write_parquet(tmp_path / "no_truth.parquet", [{"prompt": [{"role": "user", "content": "q"}]}])
    empty = write_parquet(
        tmp_path / "empty.parquet", [], schema=pa.schema([("prompt", pa.string()), ("ground_truth", pa.string())])
    )
    nulls = plain_rows()
    nulls[5]["ground_truth"] = None
    null_row = write_parquet(tmp_path / "null_row.parquet", nulls)
    bad_env = skyrl_rows()
    bad_env[3]["env_class"] = "gsm9k"
    bad_env[6]["env_class"] = "text2sql"
    env_file = write_parquet(tmp_path / "bad_env.parquet", bad_env)
    issues = check(_settings([missing, text, garbage, no_truth], [empty, null_row, env_file]))
    messages = [i.message for i in issues]
    assert messages == [
        f"data.train_files: {missing}: no such file",
        f"data.train_files: {text}: expected a .parquet, .jsonl or .json file",
        messages[2],
        f"data.train_files: {no_truth}: missing column 'reward_spec' (SkyRL's format), 'reward_model' (verl's) "
        "or 'ground_truth' (plain rows)",
        f"data.val_files: {empty} has no rows",
        f"data.val_files: {null_row}: row 5 has no ground_truth (null): fix or remove the row",
        f"data.val_files: {env_file}: row 3, column env_class: unknown env_class 'gsm9k': skyrl-gym has aime, gsm8k, "
        "gsm8k_multi_turn, lcb, search, searchcode, text2sql (or a BaseTextEnv as 'module:Class')",
        f"data.val_files: {env_file}: row 6, column env_class: env_class 'text2sql' reads "
        "environment.skyrl_gym.text2sql.db_path, which is not set: set it to a directory",
    ]
    assert messages[2].startswith(f"data.train_files: {garbage}: cannot be read as parquet: ")
    assert [i.key for i in issues][-2:] == ["environment.env_class"] * 2


def test_an_unusable_default_environment_is_refused_when_rows_rely_on_it(tmp_path):
    plain = write_parquet(tmp_path / "plain.parquet", plain_rows())
    issues = check(_settings([plain], [plain], env_class="text2sql"))
    assert [i.message for i in issues] == [
        "environment.env_class='text2sql': env_class 'text2sql' reads environment.skyrl_gym.text2sql.db_path, "
        "which is not set: set it to a directory"
    ]
    assert (
        check(_settings([plain], [])) == [check(_settings([plain], []))[0]]
        and "data.val_files (SkyRL's data.val_data) is not set" in check(_settings([plain], []))[0].message
    )
