"""A learning-curve surrogate of the CPU default task, fitted to real runs (bench/data/, issue 47).

    .venv/bin/python bench/surrogate.py [bench/data/curves_lr_clip.json]   # the fit and its fidelity

The model, kept simple on purpose (a handful of numbers, each read off the real curves):

- A run's state is its expected validation reward q (the policy's quality). Each training step with
  settings x = (lr, eps_clip) moves q a fraction k(x) of the way to a ceiling c(x):
      q[t+1] = q[t] + k(x) (c(x) - q[t]) + sigma_p * e[t]        (e: standard normal, the seed's luck)
  so a constant config's mean curve is c - (c - q0)(1 - k)^t, and a config changed mid-run (PBT)
  continues from the q it has: what changing lr or the clip does to a running policy.
- A validation observes y = q + sigma_o * e' (32 greedy prompts: sampling noise of the estimate).
- logit c(x) and logit k(x) are quadratic surfaces in (log10 lr, eps_clip), with the cross term (the
  keys interact): 12 numbers, one least-squares fit to every validation of every run (scipy's
  least_squares, a small ridge on the curvature terms). sigma_p and
  sigma_o come from the seed-to-seed residuals (method of moments: the residual variance at step t
  is sigma_o^2 + sigma_p^2 * sum_{i<t} (1-k)^(2i); scipy's nnls).
- The true reward of a config (a schedule, for PBT) is its noise-free final q: what fresh seeds give
  on average.

Fidelity: leave one config out (both its seeds held out of the fit), predict its final reward,
compare with the held-out runs' mean final validation (Pearson r, RMSE); printed by main().
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parent / "data" / "curves_lr_clip.json"
Settings = tuple[float, float]  # (lr, eps_clip)
Segment = tuple[int, float, float]  # (first step, lr, eps_clip): a schedule is a list of them


def features(lr: float, clip: float) -> np.ndarray:
    u, v = math.log10(lr), clip
    return np.array([1.0, u, v, u * u, v * v, u * v])


@dataclass(frozen=True)
class Surrogate:
    cap: np.ndarray  # logit c(x) = features(x) @ cap
    rate_logit: np.ndarray  # logit k(x) = features(x) @ rate_logit
    q0: float  # the untrained policy's reward
    sigma_p: float  # per-step process noise (a seed's luck, carried on)
    sigma_o: float  # validation noise
    steps: int  # a full run's training steps
    val_every: int  # validation interval (steps)
    lr_range: tuple[float, float]
    clip_range: tuple[float, float]

    def ceiling(self, x: Settings) -> float:
        return float(_sigmoid(features(*x) @ self.cap))

    def rate(self, x: Settings) -> float:
        return float(_sigmoid(features(*x) @ self.rate_logit))

    def step(self, q: float, x: Settings, rng: np.random.Generator | None) -> float:
        """One training step from quality q with settings x (rng None: the noise-free mean)."""
        q = q + self.rate(x) * (self.ceiling(x) - q)
        if rng is not None:
            q += self.sigma_p * rng.standard_normal()
        return min(max(q, 0.0), 1.0)

    def observe(self, q: float, rng: np.random.Generator) -> float:
        return min(max(q + self.sigma_o * rng.standard_normal(), 0.0), 1.0)

    def mean_curve(self, x: Settings, steps: int | None = None) -> list[float]:
        q, out = self.q0, [self.q0]
        for _ in range(steps if steps is not None else self.steps):
            q = self.step(q, x, None)
            out.append(q)
        return out

    def true_reward(self, schedule: Sequence[Segment]) -> float:
        """The noise-free final reward of a schedule trained from scratch (fresh seeds' mean)."""
        q = self.q0
        for t in range(self.steps):
            seg = max((s for s in schedule if s[0] <= t), key=lambda s: s[0])
            q = self.step(q, (seg[1], seg[2]), None)
        return q

    def run(self, schedule: Sequence[Segment], rng: np.random.Generator) -> list[tuple[int, float]]:
        """A fresh-seed run of a schedule: its validations (step, reward), every val_every steps."""
        q, out = self.q0, []
        for t in range(self.steps):
            seg = max((s for s in schedule if s[0] <= t), key=lambda s: s[0])
            q = self.step(q, (seg[1], seg[2]), rng)
            if (t + 1) % self.val_every == 0:
                out.append((t + 1, self.observe(q, rng)))
        return out


# ---- fitting ---------------------------------------------------------------------------------


def load(path: Path = DATA) -> list[dict]:
    return json.loads(path.read_text())["runs"]


def by_config(runs: list[dict]) -> dict[Settings, list[dict]]:
    out: dict[Settings, list[dict]] = {}
    for r in runs:
        out.setdefault((r["lr"], r["eps_clip"]), []).append(r)
    return out


def _sigmoid(z: np.ndarray | float) -> np.ndarray | float:
    return 1.0 / (1.0 + np.exp(-np.asarray(z)))


def _curves(theta: np.ndarray, X: np.ndarray, steps: np.ndarray, q0: float) -> np.ndarray:
    """The mean curve c - (c - q0)(1 - k)^t at each (config row, step): c, k logistic in the features."""
    c = _sigmoid(X @ theta[:6])
    k = _sigmoid(X @ theta[6:])
    return c - (c - q0) * (1 - k) ** steps


def fit(runs: list[dict]) -> Surrogate:
    """One least-squares fit of both surfaces to every validation of every run (scipy's least_squares),
    then the noise by moments."""
    from scipy.optimize import least_squares, nnls

    zero = [v for r in runs for s, v in r["val"] if s == 0]
    q0 = float(np.mean(zero)) if zero else 0.0
    pts = [(features(r["lr"], r["eps_clip"]), s, v) for r in runs for s, v in r["val"] if s > 0]
    X = np.array([p[0] for p in pts])
    T = np.array([p[1] for p in pts], float)
    Y = np.array([p[2] for p in pts])

    def resid(theta: np.ndarray) -> np.ndarray:
        # A small ridge on the curvature terms keeps the corners of the box from running away.
        return np.concatenate([_curves(theta, X, T, q0) - Y, 0.02 * theta[[3, 4, 5, 9, 10, 11]]])

    starts = [np.r_[c0, 0, 0, 0, 0, 0, k0, 0, 0, 0, 0, 0] for c0 in (-1.0, 0.5) for k0 in (-3.0, -1.0)]
    theta = min((least_squares(resid, x0) for x0 in starts), key=lambda r: r.cost).x
    configs = by_config(runs)
    steps = max(s for r in runs for s, _ in r["val"])
    val_steps = sorted({s for r in runs for s, _ in r["val"] if s > 0})
    lrs = [x[0] for x in configs]
    clips = [x[1] for x in configs]
    # Noise by moments: residual variance per (config, step) = so^2 + sp^2 * sum_{i<t} (1-k)^(2i).
    rows, targets = [], []
    for x, rs in configs.items():
        k = float(_sigmoid(features(*x) @ theta[6:]))
        for t in val_steps:
            m = float(_curves(theta, features(*x)[None, :], np.array([t], float), q0)[0])
            res = [v - m for r in rs for s, v in r["val"] if s == t]
            if len(res) < 2:
                continue
            rows.append([1.0, sum((1 - k) ** (2 * i) for i in range(t))])
            targets.append(float(np.mean(np.square(res))))
    so2, sp2 = nnls(np.array(rows), np.array(targets))[0] if rows else (0.0, 0.0)
    return Surrogate(
        theta[:6],
        theta[6:],
        q0,
        math.sqrt(sp2),
        math.sqrt(so2),
        int(steps),
        int(val_steps[0] if val_steps else 1),
        (min(lrs), max(lrs)),
        (min(clips), max(clips)),
    )


def final_reward(rs: list[dict]) -> float:
    """A config's observed final reward: its seeds' mean of the last two validations (less noise)."""
    return float(np.mean([v for r in rs for _, v in r["val"][-2:]]))


def fidelity(runs: list[dict]) -> dict[str, float]:
    """Leave one config out: the fit without it predicts its final reward."""
    configs = by_config(runs)
    pred, real, insample = [], [], []
    full = fit(runs)
    for x, rs in configs.items():
        model = fit([r for r in runs if (r["lr"], r["eps_clip"]) != x])
        steps = max(s for s, _ in rs[0]["val"])
        curve = model.mean_curve(x, steps)
        pred.append(float(np.mean([curve[steps], curve[steps - model.val_every]])))
        real.append(final_reward(rs))
        fc = full.mean_curve(x, steps)
        insample.append(float(np.mean([fc[steps], fc[steps - full.val_every]])))
    p, y, f = np.array(pred), np.array(real), np.array(insample)
    # Seed noise floor: the spread of one config's seeds' finals, pooled.
    floor = [
        np.std([np.mean([v for _, v in r["val"][-2:]]) for r in rs], ddof=1) for rs in configs.values() if len(rs) > 1
    ]
    return {
        "configs": float(len(configs)),
        "loo_pearson_r": float(np.corrcoef(p, y)[0, 1]),
        "loo_rmse": float(np.sqrt(np.mean((p - y) ** 2))),
        "loo_mae": float(np.mean(np.abs(p - y))),
        "in_sample_pearson_r": float(np.corrcoef(f, y)[0, 1]),
        "in_sample_rmse": float(np.sqrt(np.mean((f - y) ** 2))),
        "seed_sd_of_final": float(np.sqrt(np.mean(np.square(floor)))) if floor else float("nan"),
    }


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else DATA
    runs = load(path)
    s = fit(runs)
    print(f"surrogate of {path.name}: {len(runs)} real runs, {len(by_config(runs))} configs, {s.steps} steps")
    print(f"  q0 {s.q0:.3f}, process noise sigma_p {s.sigma_p:.4f}/step, validation noise sigma_o {s.sigma_o:.4f}")
    print("  config (lr, clip): real final (mean of seeds' last 2 validations) | surrogate final | c, k")
    for x, rs in sorted(by_config(runs).items()):
        curve = s.mean_curve(x)
        pred = (curve[-1] + curve[-1 - s.val_every]) / 2
        print(f"    {x[0]:.0e} {x[1]:.2f}: {final_reward(rs):.3f} | {pred:.3f} | {s.ceiling(x):.3f}, {s.rate(x):.3f}")
    f = fidelity(runs)
    print(
        f"fidelity, leave one config out ({f['configs']:.0f} configs, each held out with all its seeds): "
        f"Pearson r {f['loo_pearson_r']:.3f}, RMSE {f['loo_rmse']:.3f}, MAE {f['loo_mae']:.3f} "
        f"(in sample: r {f['in_sample_pearson_r']:.3f}, RMSE {f['in_sample_rmse']:.3f}; "
        f"one seed's final varies by sd {f['seed_sd_of_final']:.3f})"
    )


if __name__ == "__main__":
    main()
