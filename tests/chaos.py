"""Faults on the real local SLURM cluster, for the chaos test and bench/chaos.py.

A `ChaosSweep` runs a real sweep through the SLURM launcher on a `LocalSlurm` cluster and does to
it what a cluster does: `scontrol requeue` (preemption), a node daemon killed while a step is being
launched or while a job trains, and the sweeper itself SIGKILLed and run again. `check()` then
reads what the sweep left (result.json, metrics.jsonl, attempts.jsonl) and what SLURM recorded
(`sacct`), and says what went wrong, if anything.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from slurm_fixtures import LocalSlurm

from rllm_sweeps.records import attempts
from rllm_sweeps.records.metrics import read_metrics
from rllm_sweeps.records.model import dump
from rllm_sweeps.records.result import JobResult

REPO = Path(__file__).resolve().parents[1]
# Every training step takes at least 32 reward calls x SLOW_REWARD_S: jobs outlive the faults.
SLOW = [
    "task.reward=tests.probes.slow_reward:slow_reward",
    "data.train_batch_size=8",
    "trainer.mini_batch_size=4",
    "rollout.n=4",
    "trainer.val_before_train=false",
    "trainer.test_freq=0",
    "task.dataset.val_size=8",
    "resources.cpus_per_task=1",
    "resources.mem_gb=2",
    "resources.time_min=10",
]


@dataclass
class ChaosSweep:
    cluster: LocalSlurm
    sweep_dir: Path
    jobs: int
    steps: int
    parallel: int
    reward_s: float = 0.02
    marker_dir: Path | None = None
    sweeper: subprocess.Popen | None = None
    outputs: list[str] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    since: str = field(default_factory=lambda: datetime.now().strftime("%Y-%m-%dT%H:%M:%S"))
    started: float = field(default_factory=time.monotonic)

    # -- the sweeper ---------------------------------------------------------------------------

    def argv(self) -> list[str]:
        lrs = ",".join(f"{(i + 1) * 1e-3:g}" for i in range(self.jobs))
        argv = [sys.executable, str(REPO / "train.py"), "-m", *SLOW, f"trainer.lr={lrs}"]
        argv += [
            f"trainer.total_batches={self.steps}",
            "trainer.save_freq=2",
            f"hydra.sweeper.parallel={self.parallel}",
        ]
        argv += ["cluster=local", f"hydra.sweep.dir={self.sweep_dir}", "hydra.launcher.poll_interval_s=2"]
        if self.marker_dir is not None:
            # The first job's first batch script stops a moment before `srun` launches its step, so
            # that its node daemon can be killed right then (launch_failure_on_node).
            m = self.marker_dir
            argv.append(
                f'hydra.launcher.setup=["[ -e {m}/once ] || {{ touch {m}/once; hostname > {m}/launching.tmp; '
                f'mv {m}/launching.tmp {m}/launching; sleep 8; }}"]'
            )
        return argv

    def start(self) -> None:
        env = {**self.cluster.client_env(), "RLLM_SWEEPS_SLURM_BASE": str(self.cluster.base)}
        env.update(PYTHONPATH=str(REPO), SLOW_REWARD_S=str(self.reward_s), SLOW_REWARD_FILE=str(self.slowdown_file))
        log = open(self.sweep_dir.parent / f"sweeper-{len(self.outputs)}.log", "w+")  # noqa: SIM115
        self.outputs.append(log.name)
        self.sweeper = subprocess.Popen(
            self.cluster.client_prefix() + self.argv(), cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT
        )
        self.note("sweeper started")

    def kill_sweeper_and_rerun(self) -> None:
        assert self.sweeper is not None
        self.sweeper.send_signal(signal.SIGKILL)
        self.sweeper.wait()
        self.note("sweeper SIGKILLed")
        self.start()

    def wait(self, timeout: float) -> int:
        assert self.sweeper is not None
        return self.sweeper.wait(timeout)

    def output(self) -> str:
        return "".join(f"--- {p}\n{Path(p).read_text(errors='replace')[-4000:]}" for p in self.outputs)

    def note(self, what: str) -> None:
        self.events.append(f"{time.monotonic() - self.started:6.1f}s {what}")

    def wait_for(self, predicate, what: str, timeout: float = 240):
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if self.sweeper is not None and self.sweeper.poll() is not None:
                raise AssertionError(f"{what}: the sweeper ended first\n{self.output()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"{what}: not seen within {timeout:.0f}s\n{self.output()}")
            time.sleep(0.3)

    @property
    def slowdown_file(self) -> Path:
        return self.sweep_dir.parent / "reward_delay_s"

    def slow_down(self, reward_s: float | None) -> None:
        """Every job's reward calls take `reward_s` from now on (None: back to the default)."""
        if reward_s is None:
            self.slowdown_file.unlink(missing_ok=True)
        else:
            self.slowdown_file.write_text(f"{reward_s}\n")
        self.note(f"reward delay {reward_s}")

    # -- the jobs ------------------------------------------------------------------------------

    def job_dirs(self) -> list[Path]:
        return sorted(p for p in (self.sweep_dir / "jobs").glob("*") if p.is_dir())

    def live_attempt(self, job_dir: Path) -> attempts.Attempt | None:
        runs = attempts.read_attempts(job_dir)
        return runs[-1] if runs and runs[-1].ended_at is None else None

    def trained_steps(self, job_dir: Path) -> list[int]:
        return [r["step"] for r in read_metrics(job_dir) if r.get("kind") == "train"]

    def running(self) -> dict[Path, tuple[str, str]]:
        """Jobs SLURM runs now: job directory -> (SLURM job id, node), from sacct (a wrapper killed by
        a requeue may never have written its attempt's end)."""
        latest = {attempts.latest_scheduler_id(d): d for d in self.job_dirs()}
        latest.pop(None, None)
        if not latest:
            return {}
        args = ["sacct", "-n", "-X", "-P", "-o", "JobID,State,NodeList", "-j", ",".join(latest)]
        out = self.cluster.run_client(args, check=True).stdout
        found = {}
        for line in out.splitlines():
            job_id, state, node = line.split("|")
            if state == "RUNNING" and job_id in latest:
                found[latest[job_id]] = (job_id, node)
        return found

    def requeue(self, job_dir: Path) -> None:
        job_id, _ = self.running()[job_dir]
        self.cluster.run_client(["scontrol", "requeue", job_id], check=True)
        self.note(f"scontrol requeue {job_id} ({job_dir.name})")

    def training_now(self, job_dir: Path, within_s: float = 15) -> bool:
        """The job wrote a training step in the last `within_s` seconds."""
        times = [r.get("time", 0) for r in read_metrics(job_dir) if r.get("kind") == "train"]
        return bool(times) and time.time() - max(times) < within_s

    def kill_node_daemon(self, node: str) -> None:
        self.cluster.kill_slurmd(node)
        self.note(f"slurmd of {node} killed")

    def restart_node_daemons(self) -> None:
        self.cluster.restart_slurmds()
        self.note("slurmds restarted")

    def launch_failure_on_node(self, timeout: float = 240) -> str:
        """Kill the node daemon of the first job while its batch script is about to launch the step;
        bring it back once SLURM has recorded the failed launch (before the node is declared dead)."""
        assert self.marker_dir is not None
        launching = self.marker_dir / "launching"
        node = self.wait_for(lambda: launching.exists() and launching.read_text().strip(), "a step launch", timeout)
        self.kill_node_daemon(node)
        self.wait_for(lambda: "could not launch" in self.all_results_text(), "the failed launch recorded", 60)
        self.restart_node_daemons()
        return node

    def all_results_text(self) -> str:
        return "".join(self.result_text(d) for d in self.job_dirs())

    def result_text(self, job_dir: Path) -> str:
        try:
            return (job_dir / "result.json").read_text()
        except FileNotFoundError:
            return ""

    # -- what the sweep left -------------------------------------------------------------------

    def allocations(self) -> list[dict[str, str]]:
        """Every SLURM allocation of this sweep's jobs, requeued incarnations included (sacct -D)."""
        ids = {s.scheduler_id: d for d in self.job_dirs() for s in attempts.submissions(d)}
        out = self.cluster.run_client(
            ["sacct", "-n", "-X", "-D", "-P", "-a", "-S", self.since, "-o", "JobID,State,Start,End"], check=True
        ).stdout
        rows = []
        for line in out.splitlines():
            job_id, state, start, end = line.split("|")
            if job_id in ids and start not in ("Unknown", "None"):
                rows.append({"id": job_id, "dir": ids[job_id].name, "state": state, "start": start, "end": end})
        return rows

    def check(self, parallel: int) -> list[str]:
        """What the sweep got wrong, if anything: lost or repeated steps, jobs not completed, two live
        allocations of one job, more than `parallel` at once, processes left behind."""
        problems = []
        for job_dir in self.job_dirs():
            result = JobResult.read(job_dir)
            if result is None or result.status != "completed":
                problems.append(f"{job_dir.name}: {result.status if result else 'no result'}")
            steps = self.trained_steps(job_dir)
            if steps != list(range(1, self.steps + 1)):
                problems.append(f"{job_dir.name}: trained steps {steps}")
        rows = self.allocations()
        spans = [(_t(r["start"]), _t(r["end"]) if r["end"] not in ("Unknown", "None") else 1e18, r) for r in rows]
        for i, (s1, e1, r1) in enumerate(spans):
            for s2, e2, r2 in spans[i + 1 :]:
                if r1["dir"] == r2["dir"] and s1 < e2 and s2 < e1:
                    problems.append(f"{r1['dir']}: allocations {r1['id']} and {r2['id']} were live at once")
        most = max((sum(1 for s, e, _ in spans if s <= t < e) for t, _, _ in spans), default=0)
        if most > parallel:
            problems.append(f"{most} allocations ran at once (parallel={parallel})")
        left = leftover_processes(self.sweep_dir)
        if left:
            problems.append(f"processes left behind: {left}")
        return problems

    def figures(self) -> dict[str, int]:
        """For bench/chaos.py: jobs completed, steps lost and repeated, results lost, leftovers."""
        completed = lost = repeated = missing = 0
        for job_dir in self.job_dirs():
            result = JobResult.read(job_dir)
            completed += result is not None and result.status == "completed"
            missing += result is None
            steps = self.trained_steps(job_dir)
            lost += len(set(range(1, self.steps + 1)) - set(steps))
            repeated += len(steps) - len(set(steps))
        return {
            "jobs_completed": completed,
            "jobs": self.jobs,
            "steps_lost": lost,
            "steps_repeated": repeated,
            "results_lost": missing,
            "leftover_processes": len(leftover_processes(self.sweep_dir)),
        }


def _t(stamp: str) -> float:
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S").timestamp()


def leftover_processes(sweep_dir: Path, grace_s: float = 20) -> list[str]:
    """Processes whose command line names the sweep directory (training jobs, their Ray nodes),
    after a grace period for those on their way out."""
    deadline = time.monotonic() + grace_s
    while True:
        found = []
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit() or int(proc.name) == os.getpid():
                continue
            try:
                cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                state = (proc / "stat").read_text().rpartition(")")[2].split()[0]
            except OSError:
                continue
            if str(sweep_dir) in cmd and state != "Z":
                found.append(f"{proc.name}: {cmd[:160]}")
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(1)


def read_events_json(job_dir: Path) -> str:
    return json.dumps([dump(e) for e in attempts.read_events(job_dir)], indent=1)
