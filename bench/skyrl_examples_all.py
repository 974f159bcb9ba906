"""Every example script of SkyRL's repository that launches SkyRL's main entry point with overrides,
as a user of this project would run it (issue 51's first acceptance line).

The scripts and their overrides are tests/data/skyrl_examples_0.4/ (INDEX.txt: the commit, every
script listed and every one left out with its reason; one NAME.txt per script, one override a line,
as the script passes it). bench/skyrl_examples_extract.py writes them from a SkyRL git directory:
each script is run by bash with `uv`/`python` on PATH replaced by a stub that writes the arguments it is
given after `-m MODULE`, so the overrides are exactly what the script's shell expansion passes.

Per script, three things (each its own process or call, none shares state with another):
  compose jax   the overrides with only what a CPU machine without a hub must change (ADAPT below:
                model and data paths local, GPU counts dropped, batch sizes and lengths down, 2 steps),
                composed and validated with skyrl.engine=jax (rllm_sweeps.config.load.load_config,
                what `train.py --cfg job` runs);
  compose gpu   the overrides as the script passes them, on its own engine (trainer.strategy=fsdp or
                megatron -> skyrl.engine=fsdp|megatron), with only the model and data paths local;
  train         `train.py` with the jax overrides, a job of its own, 2 steps on CPU; trained = the job's
                result says completed with 2 steps.
A refusal is the ConfigError's first line; a traceback is any other exception (compose) or a
"Traceback (most recent call last)" in the job's output. A refusal "of a value equal to SkyRL's
default" is a refused key whose value in the script equals skyrl's own dataclass default
(skyrl.train.config), checked per refused key.

    .venv/bin/python bench/skyrl_examples_all.py --compose-only              # every script, compose only
    nice -n 19 .venv/bin/python bench/skyrl_examples_all.py --jobs 1        # compose and train
    .venv/bin/python bench/skyrl_examples_all.py --only gsm8k --json out.json
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "skyrl_examples_0.4"
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

DIGITS_ENV = "tests.probes.data_env:DigitsEnv"
# Environments whose data are GSM8K-style math rows (prompt + reward_spec.ground_truth): their rows name
# DigitsEnv, a graded reward a random tiny model varies on (tests/test_skyrl_examples_train.py: GSM8K's and
# AIME's exact answers it never gets right, and DAPO's dynamic sampling would find no prompt with a signal).
MATH_ENVS = {"gsm8k", "aime"}


# --- what a CPU machine without a hub must change (tests/test_skyrl_examples_train.py's REPLACED, extended
# to the keys the other scripts set: GPU counts and parallel sizes, the remaining lengths and batch sizes).
def _adapt():
    from test_skyrl_examples_train import DROP, REPLACED

    adapt = dict(REPLACED)
    adapt |= {
        "trainer.critic.model.path": "builtin:tiny-qwen3",
        "trainer.critic_mini_batch_size": 1,
        "trainer.max_training_steps": 2,
        "trainer.max_tokens_per_microbatch": DROP,  # a GPU memory bound
        "trainer.policy.sequence_parallel_size": DROP,
        "trainer.policy.fsdp_config.fsdp_size": DROP,
    }
    drop_patterns = (
        "trainer.placement.*_num_gpus_per_node",
        "trainer.placement.*_num_nodes",
        "trainer.*.megatron_config.*_parallel_size",
        "generator.inference_engine.*",  # vLLM's settings: the jax engine samples itself
    )
    return adapt, DROP, drop_patterns


LENGTH_CAPS = {  # lengths down: the script's value, at most this
    "trainer.max_prompt_length": 512,
    "generator.max_input_length": 1024,
    "trainer.algorithm.max_seq_len": 520,
}


def read_script(name: str) -> list[str]:
    lines = (DATA / f"{name}.txt").read_text().splitlines()
    return [line for line in lines if line and not line.startswith("#")]


def script_names() -> list[str]:
    return [line for line in (DATA / "INDEX.txt").read_text().splitlines() if _listed(line)]


def _listed(line: str) -> bool:
    return bool(line) and not line.startswith(("#", "-")) and " " not in line.strip()


def env_class_of(lines: list[str]) -> str | None:
    for line in lines:
        if line.startswith("environment.env_class="):
            return line.split("=", 1)[1]
    return None


def strategy_of(lines: list[str]) -> str:
    for line in lines:
        if line.startswith("trainer.strategy="):
            return line.split("=", 1)[1]
    return "fsdp"  # SkyRL's default


def jax_overrides(lines: list[str], train: Path, val: Path, db_dir: Path) -> list[str]:
    adapt, drop, patterns = _adapt()
    out = []
    for line in lines:
        key, _, value = line.partition("=")
        if key in adapt:
            if adapt[key] is drop:
                continue
            line = f"{key}={adapt[key]}"
        elif any(fnmatch.fnmatch(key, p) for p in patterns):
            continue
        elif key == "data.train_data":
            line = f"data.train_data=['{train}']"
        elif key == "data.val_data":
            line = f"data.val_data=['{val}']"
        elif key == "environment.skyrl_gym.text2sql.db_path":
            line = f"{key}={db_dir}"
        elif key in LENGTH_CAPS and value.isdigit() and int(value) > LENGTH_CAPS[key]:
            line = f"{key}={LENGTH_CAPS[key]}"
        out.append(line)
    if not any(line.startswith(("trainer.epochs=", "trainer.max_training_steps=")) for line in lines):
        out.append("trainer.epochs=1")  # 2 steps (SkyRL's default is 20 epochs; this project's 30 steps)
    return ["skyrl.engine=jax", *out]


def gpu_overrides(lines: list[str], train: Path, val: Path, db_dir: Path) -> list[str]:
    out = []
    for line in lines:
        key = line.split("=", 1)[0]
        if key in ("trainer.policy.model.path", "trainer.critic.model.path"):
            line = f"{key}=builtin:tiny-qwen3"
        elif key == "data.train_data":
            line = f"data.train_data=['{train}']"
        elif key == "data.val_data":
            line = f"data.val_data=['{val}']"
        elif key == "environment.skyrl_gym.text2sql.db_path":
            line = f"{key}={db_dir}"
        elif key == "trainer.logger":
            line = "trainer.logger=console"  # "change to console to print to stdout", the scripts say
        out.append(line)
    return [f"skyrl.engine={strategy_of(lines)}", *out]


ENVS = ROOT / "tests" / "data" / "envs"  # a row in each skyrl-gym environment's own format (test_skyrl_gym_envs)


def write_data(tmp: Path, env_class: str | None) -> tuple[Path, Path]:
    """8 training and 4 validation rows in SkyRL's format: GSM8K's rows (DigitsEnv) for the math environments,
    the environment's own row (tests/data/envs/ENV.jsonl) repeated for the others, and for text2sql the
    database those rows name, built in Spider's layout under tmp/db_files (the script's db_path, replaced)."""
    import json
    import sqlite3

    from data_files import QUESTIONS, skyrl_rows, write_parquet

    own = ENVS / f"{env_class}.jsonl"
    if env_class in MATH_ENVS or env_class is None or not own.exists():
        row_env = DIGITS_ENV if env_class in MATH_ENVS or env_class is None else env_class
        train_rows, val_rows = skyrl_rows(QUESTIONS, env_class=row_env), skyrl_rows(QUESTIONS[:4], env_class=row_env)
    else:
        row_env = env_class
        row = json.loads(own.read_text().splitlines()[0])
        train_rows, val_rows = [row] * 8, [row] * 4
    if env_class == "text2sql":
        db = tmp / "db_files" / "spider" / "database" / "shop" / "shop.sqlite"
        if not db.exists():
            db.parent.mkdir(parents=True, exist_ok=True)
            with sqlite3.connect(db) as conn:
                conn.executescript((ENVS / "shop.sql").read_text())
    key = re.sub(r"\W", "_", row_env)
    train = tmp / f"{key}-train.parquet"
    val = tmp / f"{key}-validation.parquet"
    if not train.exists():
        write_parquet(train, train_rows)
        write_parquet(val, val_rows)
    return train, val


# --- SkyRL's defaults, for "a refusal of a value equal to SkyRL's default"
def skyrl_default(key: str):
    """SkyRL's own default for a SkyRL-spelled key (trainer./generator./environment. ...), or KeyError."""
    from dataclasses import fields, is_dataclass

    from skyrl.train.config import SkyRLTrainConfig

    node = SkyRLTrainConfig()
    for part in key.removeprefix("skyrl.train.").split("."):
        if is_dataclass(node) and part in {f.name for f in fields(node)}:
            node = getattr(node, part)
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            raise KeyError(key)
    return node


def equals_default(key: str, value: str) -> bool:
    from omegaconf import OmegaConf

    try:
        default = skyrl_default(key)
    except (KeyError, Exception):
        return False
    try:
        parsed = OmegaConf.to_container(OmegaConf.from_cli([f"v={value}"]))["v"]  # as SkyRL's command line reads it
    except Exception:
        parsed = value
    if isinstance(default, (dict, list)) or hasattr(default, "__dataclass_fields__"):
        return False
    return parsed == default or str(parsed) == str(default)


def compose(overrides: list[str]) -> dict:
    from rllm_sweeps.config.load import load_config
    from rllm_sweeps.problems import ConfigError

    try:
        load_config(overrides, notify=lambda _: None)
        return {"ok": True}
    except ConfigError as err:
        issues = [{"key": i.key, "message": " ".join(i.message.split())} for i in err.issues]
        return {"ok": False, "issues": issues}
    except Exception as err:  # noqa: BLE001 - a traceback is what is counted
        return {"ok": False, "traceback": f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"}


def default_refusals(result: dict, lines: list[str]) -> list[str]:
    """The refused settings whose value in the script equals SkyRL's default, by any of the key's names
    (the issue's key, its SkyRL-native twins in the key map, the `set through` key of the message)."""
    from rllm_sweeps.keymap import KEY_MAPPINGS
    from rllm_sweeps.override_text import override_key

    values = dict(line.split("=", 1) for line in lines if "=" in line)
    found = []
    for issue in result.get("issues", []):
        key = issue["key"] or ""
        names = {key, *(m.native for m in KEY_MAPPINGS if m.common == key)}
        names |= set(re.findall(r"set through (\S+?)=", issue["message"]))
        for name in sorted(names):
            k = override_key(name).removeprefix("skyrl.train.")
            if k in values and equals_default(k, values[k]):
                found.append(f"{k}={values[k]}")
                break
    return found


def train(name: str, overrides: list[str], job: Path, timeout: float) -> dict:
    from rllm_sweeps.records.result import JobResult

    cmd = [sys.executable, str(ROOT / "train.py"), *overrides, f"hydra.run.dir={job}"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t0 = time.time()
    try:
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"trained": False, "timeout": True, "seconds": round(time.time() - t0)}
    out = proc.stdout + proc.stderr
    result = {"rc": proc.returncode, "seconds": round(time.time() - t0)}
    try:
        r = JobResult.read(job)
        result |= {"status": str(r.status), "steps": r.steps}
    except Exception:  # noqa: BLE001 - no result: refused before the job started, or crashed
        result |= {"status": None, "steps": 0}
    result["trained"] = proc.returncode == 0 and result["steps"] == 2
    result["traceback"] = "Traceback (most recent call last)" in out
    if not result["trained"]:
        tail = [line for line in out.splitlines() if line.strip()]
        refusal = next((line for line in tail if "refused" in line or "cannot" in line or "error" in line.lower()), "")
        result["refusal"] = refusal[:300]
        result["tail"] = "\n".join(tail[-15:])
    return result


def run_one(name: str, tmp: Path, do_train: bool, timeout: float) -> dict:
    lines = read_script(name)
    env_class = env_class_of(lines)
    train_file, val_file = write_data(tmp, env_class)
    db_dir = tmp / "db_files"
    db_dir.mkdir(exist_ok=True)
    jax = jax_overrides(lines, train_file, val_file, db_dir)
    gpu = gpu_overrides(lines, train_file, val_file, db_dir)
    row = {"name": name, "engine": strategy_of(lines), "env_class": env_class}
    row["jax"] = compose(jax)
    row["gpu"] = compose(gpu)
    row["jax_default_refusals"] = default_refusals(row["jax"], lines)
    row["gpu_default_refusals"] = default_refusals(row["gpu"], lines)
    if do_train and row["jax"]["ok"]:
        row["train"] = train(name, jax, tmp / "jobs" / name, timeout)
    return row


def cell(result: dict | None) -> str:
    if result is None:
        return "-"
    if result.get("ok") or result.get("trained"):
        return "ok"
    if result.get("traceback") and isinstance(result["traceback"], str):
        return "TRACEBACK " + result["traceback"][:80]
    if result.get("timeout"):
        return "timeout"
    if "issues" in result:
        i = result["issues"][0]
        more = f" (+{len(result['issues']) - 1})" if len(result["issues"]) > 1 else ""
        return f"refused {i['key']}: {i['message'][:110]}{more}"
    return ("TRACEBACK " if result.get("traceback") else "failed ") + (result.get("refusal") or "")[:120]


def report(rows: list[dict], trained_pass: bool) -> None:
    for r in rows:
        print(f"{r['name']}  [{r['engine']}, env {r['env_class']}]")
        print(f"    compose jax : {cell(r['jax'])}")
        print(f"    compose {r['engine']:6s}: {cell(r['gpu'])}")
        if trained_pass:
            print(f"    train 2 steps: {cell(r.get('train'))}")
    n = len(rows)
    jax_ok = sum(r["jax"]["ok"] for r in rows)
    gpu_ok = sum(r["gpu"]["ok"] for r in rows)
    tb = sum(bool(r["jax"].get("traceback")) + bool(r["gpu"].get("traceback")) for r in rows)
    defaults = [(r["name"], d) for r in rows for d in r["jax_default_refusals"] + r["gpu_default_refusals"]]
    print(f"\n{n} scripts")
    print(f"compose jax: {jax_ok}/{n} ({100 * jax_ok / n:.0f}%) compose, {n - jax_ok} refused")
    for engine in ("fsdp", "megatron"):
        sub = [r for r in rows if r["engine"] == engine]
        if sub:
            ok = sum(r["gpu"]["ok"] for r in sub)
            print(f"compose {engine}: {ok}/{len(sub)} compose, {len(sub) - ok} refused")
    print(f"compose on the scripts' own engines: {gpu_ok}/{n}")
    print(f"compose tracebacks: {tb}")
    print(f"refusals of a value equal to SkyRL's default: {len(defaults)} {defaults}")
    if trained_pass:
        ran = [r for r in rows if "train" in r]
        ok = sum(r["train"]["trained"] for r in ran)
        tbs = sum(bool(r["train"].get("traceback")) for r in ran)
        print(
            f"train 2 steps on jax/CPU: {ok}/{n} trained ({100 * ok / n:.0f}%); {len(ran)} run (the rest refused "
            f"at composition), {len(ran) - ok} of them failed; tracebacks {tbs}"
        )


# The scripts most users run first are trained first (a pass cut short has these).
FIRST = (
    "gsm8k__run_gsm8k",
    "algorithms__",
    "lora__",
    "turn_level",
    "search__",
    "text_to_sql__",
    "step_wise__",
    "livecodebench",
)


def priority(name: str) -> int:
    return next((i for i, p in enumerate(FIRST) if p in name), len(FIRST))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--compose-only", action="store_true")
    ap.add_argument("--only", action="append", default=[], help="scripts whose name contains this (repeatable)")
    ap.add_argument("--jobs", type=int, default=1, help="training jobs at once")
    ap.add_argument("--timeout", type=float, default=900, help="seconds a training job may take")
    ap.add_argument("--json", type=Path, help="write the rows here")
    args = ap.parse_args()
    names = script_names()
    if args.only:
        names = [n for n in names if any(p in n for p in args.only)]
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        (tmp / "jobs").mkdir()
        # composition in this process, one script after another (Hydra's global state); training in jobs
        rows = [run_one(n, tmp, False, args.timeout) for n in names]
        if not args.compose_only:
            todo = sorted((r for r in rows if r["jax"]["ok"]), key=lambda r: priority(r["name"]))

            def go(r: dict) -> dict:
                lines = read_script(r["name"])
                train_file, val_file = write_data(tmp, r["env_class"])
                jax = jax_overrides(lines, train_file, val_file, tmp / "db_files")
                r["train"] = train(r["name"], jax, tmp / "jobs" / r["name"], args.timeout)
                print(f"  {r['name']}: {cell(r['train'])} ({r['train']['seconds']} s)", flush=True)
                return r

            with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
                list(pool.map(go, todo))
    report(rows, not args.compose_only)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
