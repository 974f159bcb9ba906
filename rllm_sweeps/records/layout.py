"""Where a sweep's and a job's files are: one definition for writers and readers alike (as
submitit's `JobPaths`). Standard library only: reading a sweep directory must stay fast.

    outputs/<project>/<experiment>/<run name>/   a job run by hand (`run_name`: its overrides)

    SWEEP_DIR.dry-run-plan.json         a dry run's plan, beside the sweep: a dry run writes nothing in it
    SWEEP_DIR/                          SweepPaths
      manifest.json, plan.json          the command and sweep id; the plan (sweep/plan.py)
      pbt_board/                        a PBT sweep's latest score of each trial (pbt/board.py)
      confirm/                          the confirmation stage, laid out as a sweep (sweep/confirm.py)
      sweeper.lock                      held by the sweep's live sweeper (sweep/sweeper_lock.py)
      slurm/                            submitit's files of the sweep's SLURM arrays
      report/                           what `rllm-sweeps report` writes
      reruns/<job name>/<k>/            `rllm-sweeps rerun` of a job (JobPaths; never in jobs/: rerun.py)
      jobs/<index:04d>-<hash[:8]>/      JobPaths: one job
        config.yaml, result.json, metrics.jsonl, job.log, node-K.log, attempts.jsonl, generation,
        launch.<generation>.json (what the sweeper hands each attempt, the last two kept: records/launch.py),
        ray.json, ray-auth-token (0600), checkpoints/, work/, export/final/ and export/best/ (the policy
        as PEFT LoRA adapters: training/policy_export.py), slurm/ (submitit's files of a job
        submitted alone), .lock, skyrl/ (SkyRL's GPU trainer's own files: LoRA sync, logs, exports),
        .hydra/ (Hydra's record of the command), train.log (the job's Python log), schedule.json (settings
        per step range: records/schedule.py), pbt.json (a PBT trial's membership: pbt/membership.py),
        replaced/<k>/ (an earlier run's records, moved aside by trainer.resume_mode=disable: job_dir.py)
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

RESULT_FILE = "result.json"
METRICS_FILE = "metrics.jsonl"
MANIFEST_FILE = "manifest.json"
PLAN_FILE = "plan.json"
JOBS_DIR = "jobs"
REPORT_DIR = "report"
SLURM_DIR = "slurm"
ATTEMPTS_FILE = "attempts.jsonl"
GENERATION_FILE = "generation"
LAUNCH_FILE = "launch.{generation}.json"
SCHEDULE_FILE = "schedule.json"
PBT_FILE = "pbt.json"
PBT_BOARD_DIR = "pbt_board"
CONFIRM_DIR = "confirm"
HYDRA_DIR = ".hydra"
RERUNS_DIR = "reruns"
REPLACED_DIR = "replaced"
EXPORT_DIR = "export"
# A checkpoint (training/checkpoints.py) counts once its trainer state is in it; `latest` names the newest.
TRAINER_STATE_FILE = "trainer_state.json"
LATEST_FILE = "latest"
# The policies a job exports (training/policy_export.py): its last one, and its best by the judged metric.
FINAL_POLICY, BEST_POLICY = "final", "best"
DRY_RUN_PLAN_SUFFIX = ".dry-run-plan.json"
# A job by hand with no override runs here, under outputs/<project>/<experiment>/ (an override
# name always holds '=', so no command's name can be this one).
NO_OVERRIDES_RUN = "defaults"
_RUN_NAME_MAX = 80  # characters of a run name kept readable; longer ones end in a hash
_UNSAFE = re.compile(r"[^A-Za-z0-9._,=+-]")


def run_name(override_dirname: str) -> str:
    """A job run by hand: its directory's name under outputs/<project>/<experiment>/, from its
    overrides as Hydra writes them (`hydra.job.override_dirname`: sorted, `k=v,k=v`, without the keys
    conf/config.yaml excludes: the project, the experiment, trainer.resume_mode). The same command
    gets the same directory (a rerun resumes it); another command gets another one. Characters a
    path should not hold are replaced, and a name changed that way, or too long, ends in a short hash
    of the whole, so that two commands never share a directory by accident."""
    if not override_dirname:
        return NO_OVERRIDES_RUN
    safe = _UNSAFE.sub("_", override_dirname)
    if safe == override_dirname and len(safe) <= _RUN_NAME_MAX:
        return safe
    digest = hashlib.sha256(override_dirname.encode()).hexdigest()[:8]
    return f"{safe[: _RUN_NAME_MAX - 9]}-{digest}"


def dir_name(name: str) -> str:
    """One directory name for a name given as a label (trainer.experiment_name: SkyRL's run_name, which
    its scripts write as e.g. `gsm8k_Qwen/Qwen3-0.6B`): the name itself where it is one, else its
    unsafe characters replaced and a short hash of the whole added, so two names never share it."""
    safe = _UNSAFE.sub("_", name)
    if safe == name and name not in (".", "..") and len(safe) <= _RUN_NAME_MAX:
        return safe
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{safe[: _RUN_NAME_MAX - 9]}-{digest}"


# SkyRL's working paths (relative to skyrl.train) -> their directory under JobPaths.skyrl: the job's own,
# whatever the tree says (SkyRL's defaults are machine-wide: engines/skyrl_train.py).
JOB_OWNED_PATHS: dict[str, str] = {
    "trainer.policy.model.lora.lora_sync_path": "lora_sync",
    "trainer.ref.model.lora.lora_sync_path": "lora_sync",
    "trainer.critic.model.lora.lora_sync_path": "lora_sync",
    "trainer.log_path": "logs",
    "trainer.export_path": "exports",
    "trainer.ckpt_path": "ckpts",
}


@dataclass(frozen=True)
class JobPaths:
    """Every path of one job's directory."""

    root: Path

    @staticmethod
    def name(index: int, config_hash: str) -> str:
        """A planned job's directory name: its plan index and the start of its config hash."""
        return f"{index:04d}-{config_hash[:8]}"

    @staticmethod
    def index_prefix(index: int) -> str:
        """What the name of plan index `index`'s directory starts with."""
        return f"{index:04d}-"

    @staticmethod
    def hash_suffix(config_hash: str) -> str:
        """What the name of a directory of this config ends with."""
        return f"-{config_hash[:8]}"

    @property
    def result(self) -> Path:
        return self.root / RESULT_FILE

    @property
    def metrics(self) -> Path:
        return self.root / METRICS_FILE

    @property
    def config(self) -> Path:
        return self.root / "config.yaml"

    @property
    def log(self) -> Path:
        """The job process's stdout and stderr (train.py's output)."""
        return self.root / "job.log"

    def node_log(self, rank: int) -> Path:
        """The output of train.py on node `rank` > 0 of a multi-node allocation (rank 0's is `log`)."""
        return self.root / f"node-{rank}.log"

    @property
    def attempts(self) -> Path:
        return self.root / ATTEMPTS_FILE

    @property
    def generation(self) -> Path:
        return self.root / GENERATION_FILE

    def launch(self, generation: int) -> Path:
        """The launch record of the job's attempt of this generation (records/launch.py): one per
        attempt, never rewritten, so an older attempt keeps reading its own."""
        return self.root / LAUNCH_FILE.format(generation=generation)

    def launches(self) -> dict[int, Path]:
        """The launch records in the directory, by generation."""
        head, _, tail = LAUNCH_FILE.partition("{generation}")
        found = {}
        for path in self.root.glob(f"{head}*{tail}"):
            number = path.name[len(head) : len(path.name) - len(tail)]
            if number.isdigit():
                found[int(number)] = path
        return found

    @property
    def schedule(self) -> Path:
        """The settings per step range and the parents of a PBT trial (records/schedule.py)."""
        return self.root / SCHEDULE_FILE

    @property
    def pbt(self) -> Path:
        """A PBT trial's membership: its trial number, its population's directories and board (pbt/membership.py)."""
        return self.root / PBT_FILE

    @property
    def lock(self) -> Path:
        """Held by the one process that works in the directory."""
        return self.root / ".lock"

    @property
    def ray_auth_token(self) -> Path:
        """The Ray auth token of the job's current attempt, readable by its user alone (runtime/auth.py)."""
        return self.root / "ray-auth-token"

    @property
    def hydra(self) -> Path:
        """Hydra's record of the command (config.yaml, hydra.yaml, overrides.yaml), written by the job
        once it may use the directory (Hydra's own `hydra.output_subdir` is off: it writes first)."""
        return self.root / HYDRA_DIR

    @property
    def checkpoints(self) -> Path:
        return self.root / "checkpoints"

    @property
    def work(self) -> Path:
        """The backend's scratch space (sampler checkpoints)."""
        return self.root / "work"

    @property
    def export(self) -> Path:
        """The job's exported policies, each a PEFT LoRA adapter directory (training/policy_export.py)."""
        return self.root / EXPORT_DIR

    def exported(self, which: str) -> Path:
        """The adapter directory of policy `which` (FINAL_POLICY or BEST_POLICY)."""
        return self.export / which

    @property
    def skyrl(self) -> Path:
        """What SkyRL's GPU trainer writes itself (engines/skyrl_train.py: LoRA sync, logs, exports)."""
        return self.root / "skyrl"

    @property
    def slurm(self) -> Path:
        """submitit's folder for a job submitted on its own (not in an array)."""
        return self.root / SLURM_DIR

    @property
    def sweep(self) -> SweepPaths:
        """The sweep the job belongs to (a job of a sweep lives in SWEEP_DIR/jobs/)."""
        return SweepPaths(self.root.parent.parent)

    @property
    def in_sweep(self) -> bool:
        """Whether the directory is a job of a sweep (SWEEP_DIR/jobs/<name>, the sweep's records beside)."""
        sweep = self.sweep
        return self.root.parent.name == JOBS_DIR and (sweep.manifest.is_file() or sweep.plan.is_file())

    def replaced(self) -> Path:
        """Where an earlier run's records go when trainer.resume_mode=disable starts over: the next
        free replaced/<k>/ (k = 1, 2, ...)."""
        return _next_free(self.root / REPLACED_DIR)

    @property
    def kept_aside(self) -> tuple[str, ...]:
        """What stays in place when the records are moved aside: the lock this run holds, the earlier ones."""
        return (self.lock.name, REPLACED_DIR)


@dataclass(frozen=True)
class SweepPaths:
    """Every path of one sweep's directory."""

    root: Path

    @property
    def manifest(self) -> Path:
        return self.root / MANIFEST_FILE

    @property
    def plan(self) -> Path:
        return self.root / PLAN_FILE

    @property
    def jobs(self) -> Path:
        return self.root / JOBS_DIR

    @property
    def slurm(self) -> Path:
        """submitit's folder for the sweep's arrays."""
        return self.root / SLURM_DIR

    @property
    def report(self) -> Path:
        return self.root / REPORT_DIR

    @property
    def pbt_board(self) -> Path:
        """A PBT sweep's board: each trial's latest score (pbt/board.py)."""
        return self.root / PBT_BOARD_DIR

    @property
    def confirm(self) -> SweepPaths:
        """The confirmation stage: a sweep directory of its own (plan.json, jobs/; sweep/confirm.py)."""
        return SweepPaths(self.root / CONFIRM_DIR)

    @property
    def sweeper_lock(self) -> Path:
        return self.root / "sweeper.lock"

    @property
    def reruns(self) -> Path:
        """`rllm-sweeps rerun`'s jobs of this sweep, beside jobs/ (the sweep never reads them as its own)."""
        return self.root / RERUNS_DIR

    def next_rerun(self, job_name: str) -> JobPaths:
        """The next rerun of job `job_name`: reruns/<job name>/<k>/ (k = 1, 2, ...)."""
        return JobPaths(_next_free(self.reruns / job_name))

    def rerun_dirs(self) -> list[Path]:
        """Every rerun's directory, by job name then number."""
        if not self.reruns.is_dir():
            return []
        runs = [p for p in self.reruns.glob("*/*") if p.is_dir() and p.name.isdigit()]
        return sorted(runs, key=lambda p: (p.parent.name, int(p.name)))

    @property
    def dry_run_plan(self) -> Path:
        """A dry run's plan: beside the sweep directory, never in it."""
        return self.root.with_name(self.root.name + DRY_RUN_PLAN_SUFFIX)

    def job(self, index: int, config_hash: str) -> JobPaths:
        return JobPaths(self.jobs / JobPaths.name(index, config_hash))

    def job_dirs(self) -> list[Path]:
        """Every job directory there is, in name (plan) order."""
        return sorted(p for p in self.jobs.glob("*") if p.is_dir()) if self.jobs.is_dir() else []


def _next_free(parent: Path) -> Path:
    """parent/<k> for the first k >= 1 not taken."""
    taken = {int(p.name) for p in parent.glob("*") if p.name.isdigit()} if parent.is_dir() else set()
    return parent / str(next(k for k in range(1, len(taken) + 2) if k not in taken))


def sweep_holding(path: Path) -> SweepPaths | None:
    """The sweep whose records hold `path` (the directory or a file in it, a job, the confirmation
    stage), or None: outside every sweep, or in a sweep's reruns/ (what a rerun may write)."""
    path = path.resolve()
    for above in (path, *path.parents):
        if above.name == RERUNS_DIR:
            return None
        sweep = SweepPaths(above)
        if sweep.manifest.is_file() or sweep.plan.is_file():
            return sweep
    return None
