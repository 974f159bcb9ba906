"""The dataset-by-path checks, before anything is launched: every problem at once, one line each naming the
file, column or row. Run once per distinct dataset (settings and file versions) in a process, so a sweep
over other keys checks its data once; what was found (the format, rows dropped) is printed then."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

from rllm_sweeps.data.environments import env_problem
from rllm_sweeps.data.files import DataFile, DataFileError, EmptyFileError
from rllm_sweeps.data.formats import ENV_CLASS, FormatError
from rllm_sweeps.data.settings import DataSettings
from rllm_sweeps.keymap import KEY_MAPPINGS
from rllm_sweeps.native_keys import SKYRL_TRAIN_PREFIX
from rllm_sweeps.problems import ConfigIssue

TRAIN, VAL, ENV, LENGTH = "data.train_files", "data.val_files", "environment.env_class", "data.max_prompt_length"


def _native(common: str) -> str:
    """SkyRL's name of a common key (the key map's), relative to its tree."""
    return next(m.native for m in KEY_MAPPINGS if m.common == common).removeprefix(SKYRL_TRAIN_PREFIX)


_checked: dict[tuple[Any, ...], list[ConfigIssue]] = {}
checks_run = 0  # distinct datasets checked in this process (a sweep's test counts them)


def data_issues(plain: Mapping[str, Any]) -> list[ConfigIssue]:
    """The problems of a resolved config's dataset by path (none when it trains on its task)."""
    settings = DataSettings.from_plain(plain)
    return [] if settings is None else check(settings)


def _versions(settings: DataSettings) -> tuple[Any, ...]:
    out = []
    for path in (*settings.train_files, *settings.val_files):
        try:
            st = os.stat(os.path.expanduser(path))
            out.append((st.st_size, st.st_mtime_ns))
        except OSError:
            out.append(None)
    return tuple(out)


def check(settings: DataSettings) -> list[ConfigIssue]:
    global checks_run
    key = (settings, _versions(settings))
    if key not in _checked:
        checks_run += 1
        issues, notes = _check(settings)
        _checked[key] = issues
        for note in notes:
            print(note, file=sys.stderr, flush=True)
    return list(_checked[key])


def _check(settings: DataSettings) -> tuple[list[ConfigIssue], list[str]]:
    issues: list[ConfigIssue] = []
    if not settings.train_files:
        issues.append(ConfigIssue(TRAIN, f"{TRAIN} is empty: give one or more .parquet/.jsonl files"))
    if not settings.val_files:
        issues.append(
            ConfigIssue(VAL, f"{VAL} (SkyRL's {_native(VAL)}) is not set: validation needs one or more files")
        )
    opened: dict[str, list[DataFile]] = {TRAIN: [], VAL: []}
    for key, paths in ((TRAIN, settings.train_files), (VAL, settings.val_files)):
        for path in paths:
            found = _file_issues(key, path, settings.env_configs)
            if isinstance(found, DataFile):
                opened[key].append(found)
            else:
                issues += found
    default_problem = env_problem(settings.env_class, settings.env_configs)
    if default_problem and any(_rows_without_env(f) for files in opened.values() for f in files):
        issues.append(ConfigIssue(ENV, f"{ENV}={settings.env_class!r}: {default_problem}"))
    if issues:
        return issues, []
    return _length_issues(settings, opened)


def _file_issues(key: str, path: str, env_configs: Mapping[str, Any]) -> DataFile | list[ConfigIssue]:
    try:
        f = DataFile.open(path)
    except EmptyFileError as err:
        return [ConfigIssue(key, f"{key}: {err}")]
    except DataFileError as err:
        return [ConfigIssue(key, f"{key}: {err}")]
    except FormatError as err:
        return [ConfigIssue(key, f"{key}: {path}: {err}")]
    if len(f.rows) == 0:
        return [ConfigIssue(key, f"{key}: {path} has no rows")]
    import pyarrow.compute as pc

    out = []
    if not f.rllm_copy:
        row = _first_null(f)
        if isinstance(row, str):
            out.append(ConfigIssue(key, f"{key}: {path}: {row}"))
        elif row is not None:
            where = ".".join(f.spec.truth)
            out.append(ConfigIssue(key, f"{key}: {path}: row {row} has no {where} (null): fix or remove the row"))
    if ENV_CLASS in f.rows.column_names:
        for value in f.rows.unique(ENV_CLASS):
            if value is not None and (problem := env_problem(str(value), env_configs)):
                row = int(pc.index(f.rows.data.column(ENV_CLASS), value).as_py())
                out.append(ConfigIssue(ENV, f"{key}: {path}: row {row}, column {ENV_CLASS}: {problem}"))
    return out or f


def _first_null(f: DataFile) -> int | str | None:
    """The first row (0-based) without a ground truth, a message when the column has no such field, or None."""
    import pyarrow.compute as pc

    column = f.rows.data.column(f.spec.truth[0])
    try:
        for field in f.spec.truth[1:]:
            column = pc.struct_field(column, field)
    except Exception:
        return f"column {f.spec.truth[0]!r} has no field {'.'.join(f.spec.truth[1:])!r} (expected a struct with it)"
    if column.null_count == 0:
        return None
    return int(pc.index(pc.is_null(column), True).as_py())


def _rows_without_env(f: DataFile) -> bool:
    if ENV_CLASS not in f.rows.column_names:
        return True
    return f.rows.data.column(ENV_CLASS).null_count > 0


def _length_issues(settings: DataSettings, opened: dict[str, list[DataFile]]) -> tuple[list[ConfigIssue], list[str]]:
    from rllm_sweeps.data.lengths import load_tokenizer
    from rllm_sweeps.data.splits import open_split

    try:
        tokenizer, model_dir = load_tokenizer(settings.model_path)
    except (ValueError, OSError) as err:
        return [ConfigIssue("model.path", f"model.path={settings.model_path!r}: {err}")], []
    issues, notes = [], []
    for key, files in opened.items():
        split = open_split(files, settings.env_class, settings.max_prompt_length, tokenizer, model_dir)
        notes.append(split.note(key, settings.max_prompt_length))
        if len(split.examples) == 0:
            issues.append(
                ConfigIssue(
                    LENGTH,
                    f"{key}: every one of the {split.rows:,} rows of {', '.join(f.path for f in files)} is longer "
                    f"than {LENGTH}={settings.max_prompt_length} tokens: raise {LENGTH}",
                )
            )
    return issues, notes


__all__ = ["check", "data_issues"]
