"""The `rllm-sweeps` command: train, keys, validate, plan, report, status, rerun, export, warm."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from rllm_sweeps.problems import ConfigError, RecordError


def cmd_keys(args: argparse.Namespace) -> int:
    """Every common key with its SkyRL-native key(s), the engines that read it, default and meaning."""
    from omegaconf import OmegaConf

    from rllm_sweeps.config.load import load_config
    from rllm_sweeps.config.setting_effect import loop_native_keys
    from rllm_sweeps.engines import readers
    from rllm_sweeps.keymap import KEY_MAPPINGS
    from rllm_sweeps.text_table import text_table

    cfg = load_config([], notify=lambda _: None)

    def default(key: str) -> str:
        value = OmegaConf.select(cfg, key)
        return repr(OmegaConf.to_container(value) if OmegaConf.is_config(value) else value)

    rows = [("common key", "native key", "engines", "default", "meaning")]
    for m in KEY_MAPPINGS:
        transform = f" (translated: {m.to_native.__name__})" if m.to_native is not None else ""
        rows.append((m.common, m.native, ",".join(readers(m.native)), default(m.common), m.meaning + transform))
    for native in sorted(loop_native_keys()):
        rows.append(("-", native, ",".join(readers(native)), default(native), "read by the loop (no common name)"))
    footer = (
        "Any other skyrl.train.* key is read by skyrl.engine=fsdp|megatron only (SkyRL's trainer), "
        "skyrl.jax.* by skyrl.engine=jax only; a key the chosen engine does not read is refused."
    )
    if args.markdown:
        print("| " + " | ".join(rows[0]) + " |")
        print("|" + "---|" * len(rows[0]))
        for row in rows[1:]:
            print("| " + " | ".join(f"`{c}`" if i < 2 else c for i, c in enumerate(row)) + " |")
        print(f"\n{footer}")
        return 0
    print("\n".join(text_table(rows)))
    print(f"\n{footer}")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    """Compose and validate a config without running it (--cfg: print it, as `train.py --cfg job`)."""
    from omegaconf import OmegaConf

    from rllm_sweeps.config.load import load_config
    from rllm_sweeps.config.source import ConfigSource, use_source

    use_source(ConfigSource.from_command_line(args))  # the user's search path, as train.py's
    cfg = load_config(args.overrides, where="command line")
    if args.cfg:
        print(OmegaConf.to_yaml(cfg, resolve=True), end="")
    else:
        print("valid")
    return 0


def add_config_source_arguments(parser: argparse.ArgumentParser) -> None:
    """train.py's (Hydra's) flags that bring the user's configs (docs/CONFIG.md, "Your own configs")."""
    parser.add_argument("--config-dir", "-cd", help="a directory of your configs, added to the search path")
    parser.add_argument("--config-path", "-cp", help="the primary config's directory")
    parser.add_argument("--config-name", "-cn", help="the primary config (default: config)")


def cmd_plan(args: argparse.Namespace) -> int:
    """Dry run of a sweep: every job validated, the job table, totals and cost; runs nothing."""
    from rllm_sweeps.records.layout import sweep_holding
    from rllm_sweeps.sweep.planner import plan_sweep
    from rllm_sweeps.sweep.sweeper_args import split_sweeper_args

    if args.out and (sweep := sweep_holding(Path(args.out))) is not None:
        print(f"error: {args.out} is inside the records of sweep {sweep.root}: give another --out", file=sys.stderr)
        return 2
    given = split_sweeper_args(args.overrides)  # hydra.sweeper.*, hydra.sweep.dir: settings, not job overrides
    s = given.settings
    plan = plan_sweep(given.overrides, limit=args.rows, sweep_file=s.sweep_file, params=dict(s.params) or None)
    print(plan.render(rows=args.rows, parallel=s.parallel, settings=given.lines()))
    if args.out:
        print(f"plan: {plan.write(args.out)}")
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    """Write the JSON Schema of each record a sweep directory holds (docs/schemas/ is this, generated)."""
    from rllm_sweeps.records.schemas import write_schemas

    for path in write_schemas(Path(args.out)):
        print(path)
    return 0


TRAIN_HELP = "one training job, or a sweep with -m: `rllm-sweeps train ARGS` is `python train.py ARGS`"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    # The user's code in the working directory (their task, workflow or reward module) is importable,
    # as under `python -m rllm_sweeps` and a train.py of theirs: a console script's sys.path lacks it.
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    if argv[:1] == ["train"]:  # every further argument is the training app's (Hydra's), --help too
        from rllm_sweeps.train import module_main

        module_main(argv[1:])
        return 0
    parser = argparse.ArgumentParser(prog="rllm-sweeps", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("train", help=TRAIN_HELP, add_help=False)
    keys = sub.add_parser("keys", help=cmd_keys.__doc__)
    keys.add_argument("--markdown", action="store_true", help="print a Markdown table")
    keys.set_defaults(func=cmd_keys)
    validate = sub.add_parser("validate", help=cmd_validate.__doc__)
    validate.add_argument("overrides", nargs="*", help="KEY=VALUE overrides, as for train.py")
    validate.add_argument("--cfg", action="store_true", help="print the config the job runs with")
    add_config_source_arguments(validate)
    validate.set_defaults(func=cmd_validate)
    from rllm_sweeps.report import add_report_parser

    add_report_parser(sub)
    from rllm_sweeps.status import add_status_parser

    add_status_parser(sub)
    from rllm_sweeps.rerun import add_rerun_parser

    add_rerun_parser(sub)
    from rllm_sweeps.export import add_export_parser

    add_export_parser(sub)
    from launchers.warm_command import add_warm_parser

    add_warm_parser(sub)
    plan = sub.add_parser("plan", help=cmd_plan.__doc__)
    plan.add_argument("overrides", nargs="*", help="train.py -m overrides, e.g. +sweep=lr_grid trainer.lr=1e-3,3e-3")
    plan.add_argument("--rows", type=int, default=20, help="job rows to print")
    plan.add_argument("--out", help="write plan.json here (a file or a directory)")
    plan.set_defaults(func=cmd_plan)
    schema = sub.add_parser("schema", help=cmd_schema.__doc__)
    schema.add_argument("--out", default="schemas", help="the directory to write them in (default: schemas)")
    schema.set_defaults(func=cmd_schema)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (ConfigError, RecordError) as err:  # RecordError: a sweep directory's file names itself and its field
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
