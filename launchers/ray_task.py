"""What runs as a Ray job's entrypoint: the job's own command, between its attempt's start and end
in attempts.jsonl (as the SLURM task and the local launcher record them), its output in job.log.

    python -m launchers.ray_task JOB_DIR GENERATION SUBMISSION_ID -- python -m rllm_sweeps OVERRIDES...

Ray stops a job (`stop_job`) with SIGTERM: passed on to the job, which checkpoints at its next step.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from rllm_sweeps.records import attempts
from rllm_sweeps.records.layout import JobPaths


def main(args: list[str]) -> int:
    job_dir, generation, submission_id = Path(args[0]), int(args[1]), args[2]
    argv = args[args.index("--") + 1 :]
    attempts.record_start(job_dir, submission_id, 0, generation)
    code: int | None = None
    try:
        with JobPaths(job_dir).log.open("ab") as log:
            process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            signal.signal(signal.SIGTERM, lambda *_: process.send_signal(signal.SIGTERM))
            code = process.wait()
    finally:
        attempts.record_end(job_dir, submission_id, code, generation)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
