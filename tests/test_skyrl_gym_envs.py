"""skyrl-gym's registered environments, each by name with rows in its own format (tests/data/envs/), and SkyRL's
generator settings that multi-turn tool use needs: stop strings, conversation or raw-text turns, the
end-of-sequence after a stop string, step-wise trajectories, generator.max_input_length.

The episode tests run the real environments (text2sql against a SQLite file, search against a local retrieval
server, searchcode's local Python, lcb's test runner) through the real multi-turn workflow; only
``backend.sample`` is a stand-in that replies with scripted texts (ScriptedSampler), so what each turn says is
known. The last test trains every environment by name for 2 steps on the real JaxBackend (one job).
"""

from __future__ import annotations

import http.server
import json
import os
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from rllm_sweeps.data.environments import DataEnvironments
from rllm_sweeps.data.files import DataFile
from rllm_sweeps.data.formats import to_example
from rllm_sweeps.tasks.base import Task
from rllm_sweeps.training.episodes import trajectory_sequences
from rllm_sweeps.workflows.chat import ChatFormat
from rllm_sweeps.workflows.client import ModelOutput, RolloutClient, Sampling, SeedPlan
from rllm_sweeps.workflows.episode import Episode, Termination
from rllm_sweeps.workflows.generator import GeneratorSettings
from rllm_sweeps.workflows.multi_turn import MultiTurnSettings, MultiTurnWorkflow
from rllm_sweeps.workflows.rollout import run_episodes
from rllm_sweeps.workflows.stop_strings import cut_at_stop_string

REPO = Path(__file__).resolve().parents[1]
ENVS = REPO / "tests" / "data" / "envs"
SQL_STOP = ("</sql>", "</solution>")  # SkyRL's text2sql scripts' generator.sampling_params.stop


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    from rllm_sweeps.cachedir import cache_dir
    from rllm_sweeps.models import resolve_model_path

    return AutoTokenizer.from_pretrained(str(resolve_model_path("builtin:tiny-qwen3", cache_dir())))


@pytest.fixture(scope="module")
def sql_db(tmp_path_factory) -> Path:
    """environment.skyrl_gym.text2sql.db_path: Spider's layout, the database built from tests/data/envs/shop.sql."""
    root = tmp_path_factory.mktemp("sql")
    db = root / "spider" / "database" / "shop" / "shop.sqlite"
    db.parent.mkdir(parents=True)
    with sqlite3.connect(db) as conn:
        conn.executescript((ENVS / "shop.sql").read_text())
    return root


class ScriptedSampler:
    """Stands in for ``backend.sample``: call k of an episode gets replies[k] as tokens, then an end-of-turn."""

    def __init__(self, tokenizer, replies: list[str]) -> None:
        self.replies = [tokenizer(r, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id] for r in replies]

    def sample(self, prepared):
        from skyrl.tinker import types

        out = {}
        for rid, *_ in prepared.request_batch_slices:
            tokens = self.replies[min(int(rid.split(":")[1]), len(self.replies) - 1)]
            seq = types.GeneratedSequence(stop_reason="stop", tokens=tokens, logprobs=[-0.5] * len(tokens))
            out[rid] = types.SampleOutput(sequences=[seq], prompt_logprobs=None)
        return out


def example(env: str) -> dict:
    f = DataFile.open(str(ENVS / f"{env}.jsonl"))
    return to_example(f.spec, f.rows[0], env)


def episode(
    tokenizer,
    env: str,
    replies: list[str],
    *,
    configs: dict | None = None,
    stop: tuple[str, ...] | None = SQL_STOP,
    generator: GeneratorSettings | None = None,
    max_turns: int = 3,
) -> tuple[Episode, ChatFormat]:
    """One episode of the row of tests/data/envs/<env>.jsonl, its environment made by name."""
    row = example(env)
    task = Task(env, [row], [row], lambda *_: 0.0, environments=DataEnvironments(env, configs or {}))
    generator = generator or GeneratorSettings(max_input_length=1024)
    chat = ChatFormat(tokenizer, chat_template=True, conversation=generator.use_conversation_multi_turn)
    sampling = Sampling(1.0, 1.0, -1, 64, stop)
    client = RolloutClient(ScriptedSampler(tokenizer, replies), "p", ("c", "/x"), [2], sampling, SeedPlan(0, 1, 0, 1))
    workflow = MultiTurnWorkflow(task, MultiTurnSettings(max_turns=max_turns))
    run = dict(first_task_index=0, max_prompt_length=256, max_response_length=64, generator=generator)
    (ep,) = run_episodes(workflow, [row], 1, client, chat, **run)
    assert ep.termination != Termination.ERROR, ep.error
    return ep, chat


def text(chat: ChatFormat, ids: list[int]) -> str:
    return chat.tokenizer.decode(ids, skip_special_tokens=False)


# ---- stop strings (pure)


def test_a_response_is_cut_after_its_first_stop_string_which_it_keeps(tokenizer):
    ids = tokenizer("<sql>SELECT 1</sql> more <solution>x</solution>", add_special_tokens=False)["input_ids"]
    out = ModelOutput(ids, [-0.25] * len(ids), "length")
    cut = cut_at_stop_string(out, SQL_STOP, tokenizer)
    assert tokenizer.decode(cut.tokens) == "<sql>SELECT 1</sql>"
    assert cut.stop_reason == "stop" and cut.stop_string == "</sql>" and len(cut.logprobs) == len(cut.tokens)
    assert cut_at_stop_string(out, ("</answer>",), tokenizer) == out  # no stop string in it: unchanged
    assert cut_at_stop_string(out, None, tokenizer) == out


# ---- text2sql: multi-turn SQL against a SQLite file


SQL_TURNS = [
    "<think>look</think><sql>SELECT name FROM items WHERE price > 2</sql> and text past the stop string",
    "<think>done</think><solution>SELECT name FROM items WHERE price > 2</solution> trailing",
]


def test_text2sql_turns_end_at_sql_the_database_answers_and_a_right_solution_scores_one(tokenizer, sql_db):
    ep, chat = episode(tokenizer, "text2sql", SQL_TURNS, configs={"text2sql": {"db_path": str(sql_db)}})
    first, second = ep.trajectories[0].steps
    assert first.response_text.endswith("</sql>") and first.stop_reason == "stop"  # the turn ended at </sql>
    assert "past the stop string" not in first.response_text
    # conversation style (SkyRL's default): the end-of-sequence SkyRL appends after a stop string, untrained
    assert first.observation_ids[0] == tokenizer.eos_token_id
    observation = text(chat, first.observation_ids)
    assert "<observation>" in observation and "book" in observation and "lamp" in observation
    assert second.response_text.endswith("</solution>") and ep.termination == Termination.ENV_DONE
    assert ep.trajectories[0].reward == 1.0  # the solution's rows are the gold query's (the SQLite file's)
    (seq,) = trajectory_sequences(ep.trajectories[0], 1.0, 0)
    eos_at = len(first.prompt_ids) + len(first.response_ids)
    assert seq.tokens[eos_at] == tokenizer.eos_token_id and seq.mask[eos_at] == 0


def test_raw_text_turns_continue_one_assistant_message_without_the_end_of_sequence(tokenizer, sql_db):
    # use_conversation_multi_turn=false (SkyRL-SQL's own recipe): no EOS added, a sampled one dropped, the
    # observation's text appended as it is
    raw = GeneratorSettings(max_input_length=1024, use_conversation_multi_turn=False)
    configs = {"text2sql": {"db_path": str(sql_db)}}
    ep, chat = episode(tokenizer, "text2sql", SQL_TURNS, configs=configs, generator=raw)
    first = ep.trajectories[0].steps[0]
    assert tokenizer.eos_token_id not in first.response_ids + first.observation_ids
    assert text(chat, first.observation_ids).startswith("\n\n<observation>")
    no_stop = [SQL_TURNS[0].replace(" and text", ""), SQL_TURNS[1]]
    ep, _ = episode(tokenizer, "text2sql", no_stop, configs=configs, generator=raw, stop=None)
    assert ep.trajectories[0].steps[0].response_ids[-1] != tokenizer.eos_token_id  # the sampled EOS dropped


def test_step_wise_trajectories_train_each_turn_as_its_own_sequence(tokenizer, sql_db):
    step_wise = GeneratorSettings(max_input_length=1024, step_wise_trajectories=True)
    ep, chat = episode(
        tokenizer, "text2sql", SQL_TURNS, configs={"text2sql": {"db_path": str(sql_db)}}, generator=step_wise
    )
    traj = ep.trajectories[0]
    first, second = traj.steps
    # the second prompt is the chat template applied to the conversation so far (as SkyRL's step-wise generator)
    assert text(chat, second.prompt_ids).endswith("<|im_start|>assistant\n")
    assert "<observation>" in text(chat, second.prompt_ids)
    assert len(trajectory_sequences(traj, 0.5, 0)) == 2


def test_max_input_length_ends_the_conversation_before_a_turn_that_would_exceed_it(tokenizer, sql_db):
    configs = {"text2sql": {"db_path": str(sql_db)}}
    ep, _ = episode(tokenizer, "text2sql", SQL_TURNS, configs=configs)
    needed = len(ep.trajectories[0].steps[1].prompt_ids)
    short = GeneratorSettings(max_input_length=needed - 1)  # above data.max_prompt_length=256's first prompt
    ep, _ = episode(tokenizer, "text2sql", SQL_TURNS, configs=configs, generator=short)
    assert ep.termination == Termination.MAX_PROMPT_LENGTH and ep.turns == 1


# ---- search (a retrieval server), searchcode (local Python), lcb (a test runner)


@pytest.fixture
def retrieval_server() -> Iterator[str]:
    """A retrieval server of Search-R1's API (POST {query, topk} -> {result: [[{document: {contents}}]]})."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            query = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["query"]
            body = json.dumps({"result": [[{"document": {"contents": f"Paris is the capital ({query})."}}]]})
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *_args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/retrieve"
    server.shutdown()


def test_search_asks_the_configured_retrieval_server_and_scores_the_answer(tokenizer, retrieval_server):
    replies = ["<search>capital of France</search> then", "<answer>Paris</answer>"]
    configs = {"search": {"search_url": retrieval_server, "topk": 1, "timeout": 5, "log_requests": False}}
    ep, chat = episode(tokenizer, "search", replies, configs=configs, stop=("</search>", "</answer>"))
    first = ep.trajectories[0].steps[0]
    assert first.response_text.endswith("</search>")
    assert "Paris is the capital (capital of France)" in text(chat, first.observation_ids)
    assert ep.trajectories[0].reward == 1.0


def test_searchcode_runs_the_models_python_locally_and_scores_the_solution(tokenizer):
    replies = ["<tool><python>print(6 * 7)</python></tool>", "<solution>#### 42</solution>"]
    ep, chat = episode(tokenizer, "searchcode", replies, stop=("</tool>", "</solution>"))
    assert "42" in text(chat, ep.trajectories[0].steps[0].observation_ids)
    assert ep.trajectories[0].reward == 1.0


def test_lcb_scores_a_right_program_one_and_a_wrong_one_zero():
    envs, row = DataEnvironments("lcb"), example("lcb")
    assert envs.reward(row, "```python\nprint(2 * int(input()))\n```") == 1.0
    assert envs.reward(row, "```python\nprint(int(input()))\n```") == 0.0


def test_an_environment_whose_database_is_missing_is_refused_before_launch_naming_the_key():
    from rllm_sweeps.config.load import load_config
    from rllm_sweeps.problems import ConfigError

    rows = str(ENVS / "text2sql.jsonl")
    with pytest.raises(ConfigError) as err:  # SkyRL's default db_path, absent here
        load_config([f"data.train_data=[{rows}]", f"data.val_data=[{rows}]"], notify=lambda _: None)
    messages = [i.message for i in err.value.issues]  # one line per file that names it (train, val)
    assert [m.split(":")[0] for m in messages] == ["data.train_files", "data.val_files"]
    assert all(
        m.endswith(
            "env_class 'text2sql' reads environment.skyrl_gym.text2sql.db_path='/home/ray/default/sql_data', which "
            "is not a directory: set it to the directory the environment reads"
        )
        for m in messages
    )


# ---- every registered environment trains by name (one real job)


@pytest.mark.slow
def test_every_registered_environment_trains_two_steps_by_name_in_a_multi_turn_sql_recipe(tmp_path, sql_db):
    import skyrl_gym

    from rllm_sweeps.records.result import JobResult

    files = sorted(ENVS.glob("*.jsonl"))
    assert {f.stem for f in files} == set(skyrl_gym.registry)  # one file per registered id, in its own format
    listed = "[" + ",".join(map(str, files)) + "]"
    job = tmp_path / "job"
    # SkyRL's text2sql script's generator keys (stop strings, per-turn input limit apart from the prompt's),
    # sized for the tiny model on CPU; the other rows name their environments by their env_class.
    args = [
        f"data.train_data={listed}",
        f"data.val_data={listed}",
        "environment.env_class=text2sql",
        f"environment.skyrl_gym.text2sql.db_path={sql_db}",
        "generator.max_turns=2",
        "trainer.max_prompt_length=256",
        "generator.max_input_length=320",
        "generator.sampling_params.stop=['</sql>','</solution>']",
        "generator.eval_sampling_params.stop=['</sql>','</solution>']",
        "generator.sampling_params.max_generate_length=8",
        "trainer.train_batch_size=7",
        "trainer.policy_mini_batch_size=7",
        "generator.n_samples_per_prompt=2",
        "trainer.eval_batch_size=7",
        "trainer.max_training_steps=2",
        "trainer.eval_interval=0",  # no validation but the final one
        "trainer.eval_before_train=false",
        "trainer.ckpt_interval=-1",
        "rllm.episode_logging.log_episodes=true",
        f"hydra.run.dir={job}",
    ]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, str(REPO / "train.py"), *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=900
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = JobResult.read(job)
    assert result.status == "completed" and result.steps == 2
    episodes = [json.loads(line) for line in (job / "episodes.jsonl").read_text().splitlines()]
    assert all(e["termination"] != "error" for e in episodes), [e["error"] for e in episodes if e["error"]]
    assert len(episodes) == 2 * 7 * 2 + 7  # 2 steps of 7 rows (one per environment) x 2 samples, the final validation
