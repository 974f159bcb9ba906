"""Running a planned sweep: its directory, resume, the launch loop, progress, the final table.

    arguments -> plan (every job validated; a dry run stops here, its plan beside SWEEP_DIR, not in it)
    -> SWEEP_DIR holds no other sweep (sweep/ownership.py) -> SWEEP_DIR/{manifest,plan}.json
    -> for each job: skip if SWEEP_DIR has its completed result (same config hash), else launch
       with at most `parallel` in flight, the next one the moment one finishes (sweep/runner.py)
    -> the results table (report), exit code 0 only if every job completed

A rerun of the same command finds the same sweep directory (named after the sweep's own
hash unless hydra.sweep.dir is given) and runs only what is not completed yet.
"""

from __future__ import annotations

import dataclasses
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

from omegaconf import DictConfig

from launchers.base import Launcher
from launchers.choice import LauncherRefused
from rllm_sweeps.config.source import ConfigSource, use_source
from rllm_sweeps.override_text import set_value
from rllm_sweeps.problems import ConfigError, first_line
from rllm_sweeps.records.layout import SweepPaths
from rllm_sweeps.records.manifest import record_invocation
from rllm_sweeps.records.plan import PlanRecord, read_plan
from rllm_sweeps.records.store import STORE_TRIES, StoreSync, patiently
from rllm_sweeps.records.writable import unwritable
from rllm_sweeps.stop import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_INTERRUPTED, Stop
from rllm_sweeps.sweep import interrupts
from rllm_sweeps.sweep.launch_choice import (
    launch_lines,
    launcher_choice,
    launcher_parallel,
    make_launcher,
    with_launcher_resources,
)
from rllm_sweeps.sweep.memory_check import memory_check
from rllm_sweeps.sweep.ownership import refusal as ownership_refusal
from rllm_sweeps.sweep.ownership import sweep_family, sweep_id
from rllm_sweeps.sweep.parse_cli import parse_sweep_lenient
from rllm_sweeps.sweep.plan import Plan
from rllm_sweeps.sweep.planner import plan_request
from rllm_sweeps.sweep.runner import JobSource, StaticSource, SweepRunner
from rllm_sweeps.sweep.storage import SweepStorage, fetch_records, locate
from rllm_sweeps.sweep.sweeper_lock import SweeperBusy, hold_sweep_dir
from rllm_sweeps.sweeper_settings import SweeperSettings


def run_sweep(
    arguments: list[str],
    hydra_cfg: DictConfig,
    settings: SweeperSettings,
    config_loader: Any = None,
    notes: tuple[str, ...] = (),
) -> None:
    """The sweeper's body (Hydra multirun): plan, then launch; a non-zero Stop (stop.py) on failures.
    `notes`: what the plan says besides its own (how another sweeper's vocabulary was read)."""
    if settings.parallel is not None and settings.parallel < 1:  # 0 is an error, not unset; dry runs check it too
        raise Stop(
            EXIT_BAD_INPUT, f"error: hydra.sweeper.parallel={settings.parallel} is invalid: expected an integer >= 1"
        )
    # Ctrl-C (SIGINT) cancels the sweep even where the shell started it ignoring SIGINT (`cmd &`,
    # nohup): `kill -INT <pid>` must then stop its jobs too; and even where a finalizer swallows it.
    interrupts.install()
    params = dict(settings.params or {})  # Hydra's sweeper.params: key -> expression
    # Every composition of the sweep and its jobs' command lines: the app's own search path.
    configs = ConfigSource.from_hydra(hydra_cfg)
    use_source(configs)
    try:
        # Which launcher, before anything is planned: one this sweeper does not drive is refused.
        choice = launcher_choice(hydra_cfg)
        given_parallel = launcher_parallel(settings, choice)
        request, issues = parse_sweep_lenient(
            arguments, sweep_file=settings.sweep_file, params=params, config_loader=config_loader
        )
        request = with_launcher_resources(request, choice)
        if notes:
            request = dataclasses.replace(
                request, spec=dataclasses.replace(request.spec, notes=(*request.spec.notes, *notes))
            )
    except LauncherRefused as err:
        raise Stop(EXIT_BAD_INPUT, f"error: {err}") from None
    try:
        if settings.dry_run:
            # Planned once: the table is printed as soon as the jobs shown are composed (no SkyRL
            # import needed), then those jobs are validated.
            plan = plan_request(
                request,
                limit=settings.rows,
                pending=issues,
                preview=lambda p: print(p.render(rows=settings.rows, parallel=given_parallel)),
            )
        else:
            for note in notes:  # a dry run's table shows them
                print(f"note: {note}")
            plan = plan_request(request, pending=issues, max_jobs=settings.max_jobs, progress=print_planning)
    except ConfigError as err:
        raise Stop(EXIT_BAD_INPUT, f"error: {err}") from None
    except KeyboardInterrupt:
        raise Stop(EXIT_INTERRUPTED, "interrupted (Ctrl-C) while planning: nothing was launched") from None
    parallel = given_parallel if given_parallel is not None else plan.spec.parallel  # the spec checks its own
    storage = sweep_directory(hydra_cfg, arguments, plan)
    sweep_dir = storage.path
    launcher = make_launcher(choice)
    store = open_store(storage, launcher, plan)
    lock = None
    if store is not None:
        # A run holds the sweep before its mirror is filled: a second sweeper's fetching would replace
        # what the first wrote and has not sent yet.
        lock = None if settings.dry_run else hold_or_stop(sweep_dir)
        fill_mirror(store, dry_run=settings.dry_run)
    if (problem := unwritable(sweep_dir)) is not None:
        raise Stop(EXIT_BAD_INPUT, f"error: {problem}: run where you may write, or name another: hydra.sweep.dir=DIR")
    this_id, family = (
        sweep_id(plan.spec.to_dict(), plan.base_overrides),
        sweep_family(plan.spec.to_dict(), plan.base_overrides),
    )
    if (owned := ownership_refusal(sweep_dir, this_id, family)) is not None:  # a dry run says so too
        raise Stop(EXIT_BAD_INPUT, f"error: {owned}")
    if settings.dry_run:
        print("\n".join(launch_lines(choice, launcher, plan, parallel)))
    # Everything the scheduler would refuse (SLURM; the local machine's GPUs), for every job shape,
    # before any job is queued: in a dry run too, where the scheduler can be asked.
    if (unavailable := launcher.unavailable()) is not None:
        if not settings.dry_run:
            raise Stop(EXIT_BAD_INPUT, f"error: cannot submit, nothing was submitted: {unavailable}")
        print(f"note: the scheduler's own check of these jobs was skipped: {unavailable}")
        problems = []
    else:
        problems = launcher.preflight(plan.resource_shapes)
    if problems:
        head = "error: the scheduler refuses this sweep (nothing was submitted):"
        raise Stop(EXIT_BAD_INPUT, listing(head, problems))
    if unavailable is None and (storage := launcher.storage_problem(sweep_dir)) is not None:
        raise Stop(EXIT_BAD_INPUT, f"error: nothing was submitted: {storage}")
    # Each GPU job's memory against its share, the dry run's lines in the real sweep too; a job that
    # fits at no size is refused before anything is written (sweep/memory_check.py).
    memory = memory_check(plan.jobs, launcher)
    for line in memory.lines:
        print(line)
    if memory.refused:
        head = "error: out of GPU memory at any size (nothing was launched):"
        raise Stop(EXIT_BAD_INPUT, listing(head, memory.refused))
    if settings.dry_run:
        print(f"validated the {plan.totals.validated} jobs shown: no problem found")
        # Beside the sweep directory, never in it: a dry run of a finished sweep leaves its records as they are.
        kept = plan.write(SweepPaths(sweep_dir).dry_run_plan)
        print(f"plan: {kept} (dry run: nothing launched, nothing written in {sweep_dir})")
        return
    # Before anything in the directory is written: one sweeper per sweep (held until exit).
    if lock is None:  # held for the sweeper's life
        lock = hold_or_stop(sweep_dir)
    source = make_source(plan, sweep_dir)
    record_invocation(
        sweep_dir,
        sweep_id=this_id,
        family=family,
        command=sys.argv,
        launcher=launcher.name,
        study=source.study_info(),
    )
    if store is not None:  # the sweep's command and plan in the store before any job
        patiently(store.push, f"send the sweep's records to {store.uri}", tries=STORE_TRIES)
    runner = SweepRunner(
        source,
        sweep_dir,
        launcher,
        parallel,
        metric=plan.spec.metric[0],
        metrics=list(plan.spec.metric),
        max_retries=settings.max_retries,
        config_args=configs.train_py_args(),
    )
    results: dict[int, Any] | None = None
    confirmed: dict[int, Any] | None = {}
    try:
        results = runner.run()
        if plan.spec.confirm is not None:  # the top points again, with fresh seeds (sweep/confirm.py)
            from rllm_sweeps.sweep.confirm import run_stage

            confirmed = None
            confirmed = run_stage(
                plan.spec,
                plan.base_overrides,
                sweep_dir,
                launcher,
                parallel,
                max_retries=settings.max_retries,
                config_args=configs.train_py_args(),
            )
            confirmed = confirmed or {}
    except KeyboardInterrupt:
        pass  # the runner stopped the jobs in flight; the table so far, then one line
    finally:
        source.close()
    print_final_table(sweep_dir)
    if store is not None:  # what the sweeper wrote (results of ended jobs, the report) into the store
        patiently(store.push, f"send the sweep's records to {store.uri}", tries=STORE_TRIES)
    if results is None or confirmed is None:
        raise Stop(EXIT_INTERRUPTED, f"interrupted (Ctrl-C): rerun the same command to resume {sweep_dir}")
    failed = [i for i, r in results.items() if r is None or not r.status.is_final]
    failed += [f"confirm {i}" for i, r in confirmed.items() if r is None or not r.status.is_final]
    if source.stopped:
        print(f"{'error' if source.fatal else 'note'}: the search stopped: {source.stopped}", file=sys.stderr)
    if failed:
        raise Stop(EXIT_FAILED, f"{len(failed)} of {len(results)} jobs did not complete: {failed}")


# Searches whose jobs write beside their own directory (Optuna's journal; PBT's board and each other's
# checkpoints): a store's jobs write only their own (records/store.py).
NOT_ON_A_STORE = {
    "optuna": "its jobs report to the study's journal file",
    "pbt": "its trials copy each other's checkpoints",
}


def hold_or_stop(sweep_dir: Path) -> IO[str]:
    """The sweep's lock (sweep/sweeper_lock.py), or a one-line Stop naming the sweeper that holds it."""
    try:
        return hold_sweep_dir(sweep_dir)
    except SweeperBusy as err:
        raise Stop(EXIT_BAD_INPUT, f"error: {err}") from None


def open_store(storage: SweepStorage, launcher: Launcher, plan: Plan) -> StoreSync | None:
    """The sweep's object store, where it is on one and this sweep and launcher can use it, or a
    one-line Stop saying why not."""
    if storage.store_uri is None:
        return None
    given = f"hydra.sweep.dir={storage.store_uri}"
    if (why := NOT_ON_A_STORE.get(plan.spec.method)) is not None:
        raise Stop(
            EXIT_BAD_INPUT,
            f"error: {given}: sweep.method={plan.spec.method} cannot keep its records on an object store: {why}; "
            "give a path on storage every node mounts (docs/RAY.md)",
        )
    try:
        store = StoreSync(storage.store_uri, storage.path)
    except (ValueError, OSError) as err:
        raise Stop(EXIT_BAD_INPUT, f"error: {given}: pyarrow.fs cannot open it: {first_line(err)}") from None
    if (refused := launcher.use_store(store)) is not None:
        raise Stop(EXIT_BAD_INPUT, f"error: nothing was submitted: {refused}")
    return store


def fill_mirror(store: StoreSync, *, dry_run: bool) -> None:
    """The sweeper's mirror of the store up to date: a run's, every record but the checkpoints (it
    resumes the sweep); a dry run's, the sweep's own files (whose sweep it is). A one-line Stop where
    the store does not answer."""
    try:
        fetched = fetch_records(store, own_files_only=dry_run)
    except ConfigError as err:
        raise Stop(EXIT_BAD_INPUT, f"error: nothing was submitted: {err.issues[0].message}") from None
    print(f"[sweep] {store.uri}: mirrored in {store.local} ({fetched} files fetched)", flush=True)


def print_planning(done: int, total: int, seconds: float) -> None:
    """Progress of a long planning (a large grid): every job is composed and validated first."""
    print(f"[plan] {done:,} of {total:,} jobs composed and validated ({seconds:.0f} s)", flush=True)


def make_source(plan: Plan, sweep_dir: Path) -> JobSource:
    """Where the jobs come from: the plan (grid, random; PBT's population), or Optuna as results arrive."""
    if plan.spec.method == "pbt":
        from rllm_sweeps.sweep.pbt_source import PbtSource

        write_plan(plan, sweep_dir)
        return PbtSource(plan, sweep_dir)
    if plan.spec.method != "optuna":
        write_plan(plan, sweep_dir)
        return StaticSource(plan, sweep_dir)
    from rllm_sweeps.sweep.optuna_search import OptunaSource

    try:
        return OptunaSource(plan.spec, plan.base_overrides, sweep_dir)  # writes plan.json as trials come
    except ConfigError as err:
        raise Stop(EXIT_BAD_INPUT, f"error: {err}") from None


def listing(head: str, items: Iterable[str]) -> str:
    """`head`, then one `  - item` line each: a refusal with every reason."""
    return "\n".join([head, *(f"  - {item}" for item in items)])


def write_plan(plan: Plan, sweep_dir: Path) -> None:
    """plan.json, unless the directory holds this plan already (a resume: only its planning time
    would differ), so that a sweep's records change only where something changed."""
    path = SweepPaths(sweep_dir).plan
    if path.is_file():
        with tempfile.TemporaryDirectory() as scratch:  # a comparison, not a record: the plan may be streamed
            if _plan_content(path) == _plan_content(plan.write(Path(scratch))):
                return
    plan.write(sweep_dir)


def _plan_content(path: Path) -> PlanRecord | None:
    """The plan at `path` in today's shape (an older one migrated), its planning time left out."""
    try:
        plan = read_plan(path)
    except (OSError, ValueError):  # none, or one that does not read (schema 1): written again
        return None
    return dataclasses.replace(plan, totals=dataclasses.replace(plan.totals, plan_seconds=0.0))


def sweep_directory(hydra_cfg: DictConfig, arguments: list[str], plan: Plan) -> SweepStorage:
    hydra_overrides = list(hydra_cfg.hydra.overrides.hydra) + list(arguments)
    if any(set_value(a, "hydra.sweep.dir") is not None for a in hydra_overrides):
        try:
            return locate(str(hydra_cfg.hydra.sweep.dir))  # a path, or a pyarrow.fs URI
        except ConfigError as err:
            raise Stop(EXIT_BAD_INPUT, f"error: {err.issues[0]}") from None
    name = plan.spec.name or "sweep"
    project = str(hydra_cfg.trainer.project_name)
    own = Path("multirun") / project / f"{name}-{sweep_id(plan.spec.to_dict(), plan.base_overrides)}"
    return SweepStorage(own.resolve())


def print_final_table(sweep_dir: Path) -> None:
    """The results table, printed and written (SWEEP_DIR/report/), whatever the jobs' fate."""
    from rllm_sweeps.report import build_report, render_table, write_report

    report = build_report(sweep_dir)
    print(render_table(report))
    paths = write_report(sweep_dir, report=report)
    print(f"report: {paths[0].parent} ({len(paths)} files)")
    stage = SweepPaths(sweep_dir).confirm
    if stage.plan.is_file():  # the confirmation stage: a sweep directory of its own, with its own report
        stage_paths = write_report(stage.root)
        print(f"confirmation report: {stage_paths[0].parent} ({len(stage_paths)} files)")
