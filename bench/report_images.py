"""The report images of docs/REPORTS.md (PBT, Optuna, confirmation stages): runs the shipped
`+sweep=lr_pbt` (with its confirmation stage) and `+sweep=lr_optuna` as written and a small seeded
grid with a confirmation stage, rebuilds each report with `rllm-sweeps report`, and copies every
PNG into docs/img/ as a 256-colour PNG (a third of matplotlib's size, the same to the eye).

    .venv/bin/python bench/report_images.py              # the three sweeps, about 14 min on 2 cores
    .venv/bin/python bench/report_images.py --reuse DIR  # DIR/pbt, DIR/optuna, DIR/seeded_grid already run

Prints each image written with its size. The sweeps' directories stay in DIR (default: a new
temporary directory, printed).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IMG = ROOT / "docs" / "img"
# the sweep's directory under DIR and its images' prefix -> its command line
SWEEPS = {
    "pbt": ["+sweep=lr_pbt"],
    "optuna": ["+sweep=lr_optuna"],
    # a seeded grid confirmed (the search's seeds give its values a spread to compare with)
    "seeded_grid": ["trainer.lr=3e-4,1e-3,3e-3", "sweep.seeds=2", "trainer.total_batches=10", "trainer.test_freq=5"]
    + ["trainer.val_before_train=false", "task.dataset.val_size=16", "sweep.confirm.top=2", "sweep.confirm.seeds=3"],
}


def run(*args: str) -> None:
    subprocess.run([sys.executable, *args], cwd=ROOT, check=True, stdout=subprocess.DEVNULL, timeout=3600)


def small_png(src: Path, dest: Path) -> int:
    """`src` as a 256-colour PNG at `dest`; its size in bytes."""
    from PIL import Image

    with Image.open(src) as image:
        image.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(dest, optimize=True)
    return dest.stat().st_size


def main() -> None:
    from rllm_sweeps.report import write_report

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--reuse", type=Path, help="a directory holding the pbt/, optuna/ and seeded_grid/ sweeps already run"
    )
    args = parser.parse_args()
    work = args.reuse or Path(tempfile.mkdtemp(prefix="report-images-"))
    for name, command in SWEEPS.items():
        sweep_dir = work / name
        if args.reuse is None:
            print(f"running {' '.join(command)} in {sweep_dir} ...", flush=True)
            run(str(ROOT / "train.py"), "-m", *command, f"hydra.sweep.dir={sweep_dir}")
        stages = {name: sweep_dir}
        if (sweep_dir / "confirm" / "plan.json").is_file():
            stages[f"{name}_confirm"] = sweep_dir / "confirm"
        for prefix, directory in stages.items():
            written = write_report(directory)  # the PNGs of this report only, none left from an older one
            for png in sorted(p for p in written if p.suffix == ".png"):
                dest = IMG / (png.name if png.name.startswith(f"{name}_") else f"{prefix}_{png.name}")
                print(f"{dest.relative_to(ROOT)}  {small_png(png, dest) // 1024} KB")
    print(f"sweeps in {work}")


if __name__ == "__main__":
    main()
