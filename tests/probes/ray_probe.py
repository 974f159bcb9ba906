"""A toy-task reward that, on its first call, checks the job's Ray cluster from inside.

It starts a separate Python process that calls ray.init() with no address (as SkyRL
does) and records which cluster it reached and its resources, in RAY_PROBE_OUT.

auth_probe_reward also tries the cluster as strangers would, each a `ray.init()` from another process, at the
same time: with no token, with a wrong one (the token file named by RAY_PROBE_OTHER_TOKEN, another
job's, else a random one) and with the job's own; and it looks for the job's token on every
process command line of the machine. The record holds outcomes and counts, never the token.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rllm_sweeps.runtime.auth import AUTH_VARS
from rllm_sweeps.tasks.toy import letters_reward
from tests.probes.slow_reward import slow_reward

_done = False

PROBE = """
import json, ray
ray.init(logging_level="ERROR")
ctx = ray.get_runtime_context()
print(json.dumps({"gcs_address": ctx.gcs_address, "resources": ray.cluster_resources(),
                  "nodes": len([n for n in ray.nodes() if n["Alive"]])}))
ray.shutdown()
"""

# A client of RAY_ADDRESS: did ray.init() let it in?
CLIENT = """
import ray
try:
    ray.init(logging_level="ERROR")
except Exception as err:
    print("REFUSED", type(err).__name__)
else:
    print("ACCEPTED", ray.cluster_resources().get("CPU"))
    ray.shutdown()
"""
REFUSAL = "InvalidAuthToken"  # what the cluster's servers answer a request without the right token


def _other_token(scratch: Path) -> str:
    """A token file that is not this job's: another job's (RAY_PROBE_OTHER_TOKEN), else a random one."""
    other = os.environ.get("RAY_PROBE_OTHER_TOKEN")
    if other:
        deadline = time.monotonic() + 120  # the other job writes it when its cluster starts
        while not Path(other).exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        return other
    path = scratch / "wrong-token"
    path.write_text(secrets.token_hex(32))
    path.chmod(0o600)
    return str(path)


def try_clients() -> dict[str, dict]:
    """ray.init() from three other processes at once: no token, a wrong token, the job's token."""
    with tempfile.TemporaryDirectory() as scratch:
        stranger = {k: v for k, v in os.environ.items() if k not in AUTH_VARS}
        stranger["HOME"] = scratch  # no ~/.ray/auth_token either
        envs = {
            "none": stranger,
            "wrong": {**stranger, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": _other_token(Path(scratch))},
            "right": dict(os.environ),
        }
        procs = {
            name: subprocess.Popen(
                [sys.executable, "-c", CLIENT], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
            for name, env in envs.items()
        }
        out = {}
        for name, proc in procs.items():
            stdout, stderr = proc.communicate(timeout=180)
            said = stdout.strip().splitlines()[-1] if stdout.strip() else ""
            out[name] = {
                "outcome": said.split()[0].lower() if said else f"exit {proc.returncode}",
                "invalid_token": REFUSAL in stderr,
                "stderr": stderr[-1000:],
            }
        return out


def token_on_command_lines() -> dict[str, int]:
    """How many process command lines of this machine hold the job's token (and how many are Ray's)."""
    token = Path(os.environ["RAY_AUTH_TOKEN_PATH"]).read_text().strip().encode()
    found = {"with_token": 0, "ray": 0}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        found["with_token"] += token in cmdline
        found["ray"] += b"raylet" in cmdline or b"gcs_server" in cmdline
    return found


def _probe_once(strangers: bool) -> None:
    global _done
    if _done:
        return
    _done = True
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120)
    record = {"RAY_ADDRESS": os.environ.get("RAY_ADDRESS"), "returncode": out.returncode}
    record["CUDA_VISIBLE_DEVICES"] = os.environ.get("CUDA_VISIBLE_DEVICES")
    record["stderr"] = out.stderr[-2000:]
    if out.returncode == 0:
        record.update(json.loads(out.stdout.strip().splitlines()[-1]))
    if strangers:
        record["clients"] = try_clients()
        record["cmdlines"] = token_on_command_lines()
    with open(os.environ["RAY_PROBE_OUT"], "w") as f:
        json.dump(record, f)


def probe_reward(prompt: str, response: str, ground_truth: str) -> float:
    _probe_once(strangers=False)
    return letters_reward(prompt, response, ground_truth)


def auth_probe_reward(prompt: str, response: str, ground_truth: str) -> float:
    """probe_reward, plus the strangers' ray.init() and the command-line search."""
    _probe_once(strangers=True)
    return letters_reward(prompt, response, ground_truth)


def slow_auth_probe_reward(prompt: str, response: str, ground_truth: str) -> float:
    """auth_probe_reward's checks on the first call, then slow_reward's steps of a known minimum length."""
    _probe_once(strangers=True)
    return slow_reward(prompt, response, ground_truth)
