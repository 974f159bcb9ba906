"""The `pbt:` block of a `method: pbt` sweep, checked (every problem collected, each naming its key).

    method: pbt
    parameters:
      trainer.lr: {distribution: log_uniform_values, min: 1.0e-4, max: 1.0e-2}
    pbt:
      population: 4             # trials, all running at once (the initial points drawn at random)
      interval: 3               # training steps between decisions
      burn_in: 6                # no trial copies another before this step (they report)
      quantile: 0.25            # the bottom fraction copies the top fraction
      factors: [0.8, 1.2]       # a perturbation multiplies by one of them
      resample_probability: 0.25
      mutate: [trainer.lr]      # default: every swept key

On the command line: `sweep.method=pbt sweep.pbt.population=4 sweep.pbt.interval=3`.

A trial continues from another's checkpoint, so trials may differ only in settings the loop
reads afresh at each step (records/schedule.py's MUTABLE_SETTINGS) and share one seed (the
copied step's data position is a function of the seed and the step).

The block becomes the decisions' settings here (pbt_settings: each mutated key's Domain from its
sweep parameter), which the sweeper writes into every trial's pbt.json: the trials' jobs never
read the sweep DSL (rllm_sweeps/pbt/).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rllm_sweeps.override_text import override_key
from rllm_sweeps.pbt.decision import BURN_IN_SHARE, Domain, Mutation, PbtSettings, burn_in_steps
from rllm_sweeps.pbt.mutable import mutable_keys, schedule_field
from rllm_sweeps.problems import did_you_mean
from rllm_sweeps.sweep.block_settings import block_settings, is_int
from rllm_sweeps.sweep.node import node_fields
from rllm_sweeps.sweep.param import Param


@dataclass(frozen=True)
class PbtSpec:
    population: int = 4
    # Defaults chosen on bench/pbt_defaults.py's surrogate of the CPU task (issue 47; docs/BENCHMARKS.md):
    # deciding at every other step and perturbing only (no resampling) selected best there; the burn-in
    # on the real tier (bench/search_peers.py --tier real), where early decisions copied a lineage
    # that collapsed late.
    interval: int = 2
    burn_in: int | None = None  # None: pbt/decision.py's BURN_IN_SHARE of a trial's steps
    quantile: float = 0.25
    factors: tuple[float, ...] = (0.8, 1.2)
    resample_probability: float = 0.0
    mutate: tuple[str, ...] | None = None  # None: every swept key

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "population": self.population,
            "interval": self.interval,
            "quantile": self.quantile,
            "factors": list(self.factors),
            "resample_probability": self.resample_probability,
        }
        # The spec is the sweep's id (sweep_id): burn_in, added after sweeps ran without it, is in it only
        # when set, so the same command of a sweep started before it keeps its id and resumes.
        if self.burn_in is not None:
            out["burn_in"] = self.burn_in
        if self.mutate is not None:
            out["mutate"] = list(self.mutate)
        return out


def defaults_text() -> str:
    """PbtSpec's defaults as docs/SWEEPS.md's settings table states them (a test holds the two together)."""
    d = PbtSpec()
    factors = ", ".join(f"{f:g}" for f in d.factors)
    burn_in = f"{d.burn_in} steps" if d.burn_in is not None else f"{BURN_IN_SHARE:.0%} of a trial's steps"
    return (
        f"population {d.population}, interval {d.interval}, burn-in {burn_in}, quantile {d.quantile:g}, "
        f"factors [{factors}], resample {d.resample_probability:g}"
    )


def parse_pbt_settings(
    block: Any,
    where: str,
    parts: Mapping[str, tuple[Any, str]],
    params: Sequence[Param],
    problem: Any,
) -> PbtSpec:
    """The `pbt:` block with the command line's `sweep.pbt.KEY` settings (`parts`) on top, checked
    against the sweep's parameters. Every problem goes to `problem(where, message)`."""
    raw = block_settings(block, where, parts, node_fields("pbt"), "pbt", problem)
    d = PbtSpec()

    def get(key: str, default: Any) -> tuple[Any, str]:
        value, at = raw.get(key, (None, f"{where}.{key}"))
        return (default if value is None else value), at

    population, at = get("population", d.population)
    if not is_int(population) or population < 2:
        problem(at, f"pbt.population is the number of trials, an integer >= 2; got {population!r}")
        population = d.population
    interval, at = get("interval", d.interval)
    if not is_int(interval) or interval < 1:
        problem(at, f"pbt.interval is a number of training steps >= 1; got {interval!r}")
        interval = d.interval
    burn_in, at = get("burn_in", d.burn_in)
    if burn_in is not None and (not is_int(burn_in) or burn_in < 0):
        problem(at, f"pbt.burn_in is a number of training steps >= 0 before the first decision; got {burn_in!r}")
        burn_in = d.burn_in
    quantile, at = get("quantile", d.quantile)
    if not _is_number(quantile) or not 0 < quantile <= 0.5:
        problem(at, f"pbt.quantile is a fraction of the population in (0, 0.5]; got {quantile!r}")
        quantile = d.quantile
    factors, at = get("factors", list(d.factors))
    if not isinstance(factors, list | tuple) or not factors or not all(_is_number(f) and f > 0 for f in factors):
        problem(at, f"pbt.factors is a non-empty list of positive numbers, e.g. [0.8, 1.2]; got {factors!r}")
        factors = list(d.factors)
    resample, at = get("resample_probability", d.resample_probability)
    if not _is_number(resample) or not 0 <= resample <= 1:
        problem(at, f"pbt.resample_probability is a probability in [0, 1]; got {resample!r}")
        resample = d.resample_probability
    swept = {p.key: p for p in params if p.is_swept}
    mutate, at = get("mutate", None)
    if mutate is not None:
        if isinstance(mutate, str):
            mutate = [mutate]
        if not isinstance(mutate, list | tuple) or not mutate:
            problem(at, f"pbt.mutate is a list of swept keys; got {mutate!r}")
            mutate = None
        else:
            for key in mutate:
                if key not in swept:
                    problem(at, f"pbt.mutate names {key!r}, not a swept parameter{did_you_mean(str(key), swept)}")
            mutate = tuple(str(k) for k in mutate if k in swept)
    if not swept:
        problem(where, "a PBT sweep needs a swept parameter (e.g. trainer.lr: {distribution: log_uniform_values, ...})")
    for p in swept.values():
        if p.kind == "distribution" and not p.drawn.direct:
            problem(
                p.source,
                f"{p.distribution} draws a rounded or normal value, which PBT cannot perturb in place: give "
                f"{p.key} values or a uniform or log-uniform distribution",
            )
        if schedule_field(p.key) is None:
            problem(
                p.source,
                f"{p.key} cannot change mid-run, so PBT trials that differ in it cannot continue from each "
                f"other's checkpoints; PBT sweeps {', '.join(mutable_keys())}: give {p.key} one value",
            )
    return PbtSpec(
        int(population),
        int(interval),
        None if burn_in is None else int(burn_in),
        float(quantile),
        tuple(float(f) for f in factors),
        float(resample),
        mutate,
    )


def pbt_settings(spec: PbtSpec, params: Iterable[Param], seed: int) -> PbtSettings:
    """The decisions' settings of a sweep's `pbt:` block: a Mutation per mutated swept key, from the
    key's own sweep parameter (its distribution or values)."""
    swept = [p for p in params if p.is_swept]
    keys = set(spec.mutate) if spec.mutate is not None else {p.key for p in swept}
    mutations = tuple(Mutation(domain_of(p), spec.factors, spec.resample_probability) for p in swept if p.key in keys)
    return PbtSettings(spec.population, spec.interval, spec.quantile, mutations, seed, spec.burn_in)


def domain_of(param: Param) -> Domain:
    """Where a swept parameter's values lie, as a PBT trial's job explores them (without the DSL)."""
    categorical = param.kind == "values" and param.int_range is None
    values = tuple(c.value for c in param.choices) if categorical else None
    return Domain(param.key, param.optuna_distribution(), values)


def pbt_base_overrides(spec: PbtSpec, base: Sequence[str]) -> tuple[list[str], list[str]]:
    """The overrides every trial gets: a validation and a checkpoint at each interval (the score a
    trial reports, the checkpoint others copy), unless set; (overrides, notes)."""
    keys = {override_key(o) for o in base}
    added = [f"{k}={spec.interval}" for k in ("trainer.test_freq", "trainer.save_freq") if k not in keys]
    notes = [f"pbt: every trial gets {' '.join(added)} (its score and checkpoint at each interval)"] if added else []
    return [*base, *added], notes


def pbt_job_issues(spec: PbtSpec, plain: Mapping[str, Any]) -> list[str]:
    """What a composed trial config must hold for PBT: its interval's validation and checkpoint, and
    a step to decide at before the last."""
    trainer = plain.get("trainer", {})
    out = []
    for key in ("test_freq", "save_freq"):
        value = trainer.get(key)
        if not is_int(value) or value <= 0 or spec.interval % value:
            out.append(
                f"trainer.{key}={value} must divide pbt.interval={spec.interval} (a trial's score and "
                f"checkpoint at each interval): use trainer.{key}={spec.interval}"
            )
    total = trainer.get("total_batches")
    if is_int(total) and 0 <= total <= spec.interval:
        out.append(
            f"trainer.total_batches={total} leaves no perturbation interval before the last step "
            f"(pbt.interval={spec.interval}): train longer or lower the interval"
        )
    elif is_int(total) and (first := first_decision(spec, total)) >= total:
        out.append(
            f"trainer.total_batches={total} ends before the first decision after pbt.burn_in={spec.burn_in} "
            f"(at step {first}, a multiple of pbt.interval={spec.interval}): no trial would ever copy another; "
            "lower pbt.burn_in or train longer"
        )
    return out


def first_decision(spec: PbtSpec, total_steps: int) -> int:
    """The first step a trial of `total_steps` may copy another at: a multiple of the interval, not
    before the burn-in."""
    return max(1, math.ceil(burn_in_steps(spec.burn_in, total_steps) / spec.interval)) * spec.interval


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
