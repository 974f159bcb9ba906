"""A toy-task reward that, on its first call, checks the job's Ray cluster from inside.

It starts a separate Python process that calls ray.init() with no address (as SkyRL
does) and records which cluster it reached and its resources, in RAY_PROBE_OUT.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from rllm_sweeps.tasks.toy import letters_reward

_done = False

PROBE = """
import json, ray
ray.init(logging_level="ERROR")
ctx = ray.get_runtime_context()
print(json.dumps({"gcs_address": ctx.gcs_address, "resources": ray.cluster_resources(),
                  "nodes": len([n for n in ray.nodes() if n["Alive"]])}))
ray.shutdown()
"""


def probe_reward(prompt: str, response: str, ground_truth: str) -> float:
    global _done
    if not _done:
        _done = True
        out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120)
        record = {"RAY_ADDRESS": os.environ.get("RAY_ADDRESS"), "returncode": out.returncode}
        record["CUDA_VISIBLE_DEVICES"] = os.environ.get("CUDA_VISIBLE_DEVICES")
        record["stderr"] = out.stderr[-2000:]
        if out.returncode == 0:
            record.update(json.loads(out.stdout.strip().splitlines()[-1]))
        with open(os.environ["RAY_PROBE_OUT"], "w") as f:
            json.dump(record, f)
    return letters_reward(prompt, response, ground_truth)
