"""Every use of submitit's private (underscored) API in the project.

Checked against submitit 1.5.4. Each function says why the public API does not do it. After upgrading
submitit, the SLURM launcher's preflight tests (tests/test_slurm_sweep.py) say whether these still hold;
tests/test_structure.py keeps such uses here (Hydra's and OmegaConf's are in rllm_sweeps/config/private_api.py).
"""

from __future__ import annotations

from pathlib import Path
from unittest import mock

import submitit


def sbatch_script(executor: submitit.AutoExecutor, command: str) -> str:
    """The batch script (its `#SBATCH` lines included) that `executor` would submit to run `command`,
    rendered without writing anything: submitit's folder is not created.

    Public submitit writes the script only while it submits a job (Executor.submit); the SLURM
    executor inside an AutoExecutor, and its rendering of the script, are private.
    """
    slurm_executor = executor._executor
    return slurm_executor._make_submission_file_text(command, uid="preview")  # the SLURM executor ignores uid


def slurm_executor_anywhere(folder: Path, max_num_timeout: int) -> submitit.AutoExecutor:
    """AutoExecutor(cluster="slurm") also where `srun` is not on PATH, to render the batch script a
    dry run shows (never to submit: the SLURM launcher refuses a run where SLURM cannot be asked).

    Public submitit refuses to build its SLURM executor without `srun` ("Could not detect srun"),
    and that check (SlurmExecutor.affinity) is all that needs SLURM; the flags are rendered by submitit
    alone, as for a submission.
    """
    with mock.patch.object(submitit.SlurmExecutor, "affinity", classmethod(lambda cls: 2)):
        return submitit.AutoExecutor(folder=folder, cluster="slurm", slurm_max_num_timeout=max_num_timeout)
