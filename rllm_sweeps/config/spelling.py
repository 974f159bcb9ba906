"""Three vocabularies, one config: rLLM's, SkyRL's and this project's spellings of a key.

Users arrive with command lines written for rLLM's unified trainer or for SkyRL's own
entry point. This module rewrites a key as typed into the one spelling the config tree has
(the canonical spelling, which is what the tool prints):

- rLLM's namespace: ``rllm.X`` is the common key ``X`` (``rllm.rollout.n=8`` -> ``rollout.n=8``),
  and rLLM's backend group ``rllm/backend=skyrl`` is ``backend=skyrl``; an ``rllm.`` key this
  project has no common key for stays as typed, so the unknown-key error names it;
- rLLM's ``+data.train_batch_size=32`` (``+`` because rLLM's tree lacks the key) sets the key
  this tree has;
- SkyRL's native paths verbatim: a top-level key that is not a common key but is a path of
  SkyRL's tree (``trainer.placement.colocate_all``, ``generator.inference_engine.num_engines``)
  is ``skyrl.train.<path>``. Paths that are both (``trainer.seed``, ``trainer.logger``,
  ``trainer.project_name``, ``trainer.resume_mode``) are the common key, which the key map
  makes the same setting as the native one (tests/test_spelling.py checks every such path);
  a value there that only SkyRL's spelling has (``trainer.resume_mode=null``) is read as
  SkyRL's, so the key map translates it;
- anything else is left as it is (unknown keys are reported later, with suggestions).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from rllm_sweeps.native_keys import SKYRL_TRAIN_PREFIX
from rllm_sweeps.override_text import split_override, split_prefix

RLLM_PREFIX = "rllm."
RLLM_GROUPS = {"rllm/backend": "backend"}  # rLLM's config groups -> ours
# Top-level sections of SkyRL's tree (SkyRLTrainConfig's fields); the first two have no common
# keys, so any key there is SkyRL's.
SKYRL_ONLY_SECTIONS = ("generator", "environment")
SKYRL_SECTIONS = (*SKYRL_ONLY_SECTIONS, "trainer", "data")


def _paths(tree: Any, prefix: str = "") -> Iterator[str]:
    """Every key path of a plain tree, inner nodes included."""
    if isinstance(tree, dict):
        for key, value in tree.items():
            path = f"{prefix}{key}"
            yield path
            yield from _paths(value, path + ".")


@functools.cache
def common_paths() -> frozenset[str]:
    """The common keys of conf/config.yaml (inner nodes too): read from the file, no Hydra."""
    from omegaconf import OmegaConf

    from rllm_sweeps.config.compose import CONF_DIR

    tree = OmegaConf.to_container(OmegaConf.load(CONF_DIR / "config.yaml"))
    for name in ("defaults", "hydra", "skyrl"):
        tree.pop(name, None)
    return frozenset(_paths(tree))


@functools.cache
def native_paths() -> frozenset[str]:
    """Every key path of SkyRL's tree, relative to skyrl.train."""
    from rllm_sweeps.config.native import EXAMPLE_ADDED, skyrl_train_defaults

    return frozenset(_paths(skyrl_train_defaults())) | frozenset(EXAMPLE_ADDED)


def canonical_key(key: str) -> str:
    """The canonical spelling of a key as typed (a value override's key or a group)."""
    if key in RLLM_GROUPS:
        return RLLM_GROUPS[key]
    if key.startswith(RLLM_PREFIX):
        rest = key[len(RLLM_PREFIX) :]
        return rest if rest in common_paths() or rest.startswith("task.") else key
    root = key.split(".", 1)[0]
    native = key in native_paths() or _in_free_form(SKYRL_TRAIN_PREFIX + key)
    if root in SKYRL_ONLY_SECTIONS or (root in SKYRL_SECTIONS and key not in common_paths() and native):
        return SKYRL_TRAIN_PREFIX + key
    return key


def canonical_overrides(overrides: Iterable[str], notify: Callable[[str], None] | None = None) -> list[str]:
    """Command-line overrides with their keys in the canonical spelling (values untouched).

    A SkyRL-native override that is no field of SkyRL's tree is put to SkyRL's own override
    handling (config/native.skyrl_reading), also under its SkyRL 0.4 name where 0.4 moved it:
    what SkyRL remaps is written as SkyRL reads it, what SkyRL drops is dropped, each with a
    note to `notify`; what SkyRL refuses or does not know stays, for validation to report.
    """
    out: list[str] = []
    overrides = list(overrides)
    lines = [canonical_override(o) for o in overrides]
    for override, line in zip(overrides, lines, strict=True):
        key = line.partition("=")[0]
        if "=" in line and key.startswith("++" + SKYRL_TRAIN_PREFIX) and not _exists(key[2:]):
            replaced = _as_skyrl_reads_it(line[2:], override, notify, lines)  # a new key of a free-form dictionary
        elif "=" in line and key.startswith(SKYRL_TRAIN_PREFIX) and not _exists(key):
            replaced = _as_skyrl_reads_it(line, override, notify, lines)
        elif "=" in line and is_unknown_in_shared_section(key):
            # trainer.X / data.X that neither tree has: SkyRL's if SkyRL's override handling knows it
            replaced = _as_skyrl_reads_it(SKYRL_TRAIN_PREFIX + line, override, notify, lines)
        else:
            replaced = _null_as_skyrl_reads_it(line, notify)
        # several settings of one optional section (delta_weight_sync's) read together: one line for them all
        out += [r for r in ([line] if replaced is None else replaced) if r not in out or r == line]
    return out


def _null_as_skyrl_reads_it(line: str, notify: Callable[[str], None] | None) -> list[str] | None:
    """A null for a SkyRL setting that SkyRL types as a name or a switch (a run name given as `key=`: SkyRL's
    command line reads an empty value as null, and its config builder takes it): read as SkyRL's code
    reads it. A null name is no name (the default one is used; the override is dropped); a null
    switch is false (SkyRL tests it with `if`). Anything else: None (kept; validation judges it)."""
    written = split_override(line)
    if written.value != "null" or not written.key.startswith(SKYRL_TRAIN_PREFIX) or "~" in written.prefix:
        return None
    from rllm_sweeps.config import rules
    from rllm_sweeps.config.native import skyrl_train_defaults
    from rllm_sweeps.keymap import KEY_MAPPINGS
    from rllm_sweeps.plain_tree import plain_get_or_none

    common = next((m.common for m in KEY_MAPPINGS if m.native == written.key), None)
    if common is not None and rules.RULES.get(common) in (rules.label, rules.path_name):
        _say(notify, f"note: {written.key}=null: SkyRL reads a null name as none given; {common} keeps its default")
        return []
    if isinstance(plain_get_or_none(skyrl_train_defaults(), written.key.removeprefix(SKYRL_TRAIN_PREFIX)), bool):
        _say(notify, f"note: {written.key}=null: read as false, as SkyRL's code reads a null switch")
        return [f"{written.prefix}{written.key}=false"]
    return None


def is_unknown_in_shared_section(key: str) -> bool:
    """A trainer.* / data.* key that neither the common tree nor SkyRL's has."""
    root = key.split(".", 1)[0]
    return (
        root in SKYRL_SECTIONS
        and root not in SKYRL_ONLY_SECTIONS
        and not _exists(key)
        and not _exists(SKYRL_TRAIN_PREFIX + key)
    )


def moved_paths(rel: str) -> list[str]:
    """Where SkyRL 0.4 moved a SkyRL 0.3 generator setting (rLLM's scripts use the old names):
    generator.X[.Y] -> generator.inference_engine.X[.Y] (num_inference_engines -> num_engines;
    generator.delta_weight_sync.sync_dir -> generator.inference_engine.delta_weight_sync.sync_dir)."""
    section, _, rest = rel.partition(".")
    if section != "generator" or not rest:
        return []
    leaf, dot, below = rest.partition(".")
    variants = {leaf, leaf.removeprefix("inference_engine_"), leaf.replace("num_inference_engines", "num_engines")}
    return [f"generator.inference_engine.{v}{dot}{below}" for v in sorted(variants)]


def _as_skyrl_reads_it(
    line: str, typed: str, notify: Callable[[str], None] | None, others: list[str] = ()
) -> list[str] | None:
    """SkyRL's reading of one unknown native override: replacement overrides, or None (keep it).
    Where its section is one SkyRL leaves null by default (an optional dataclass with a required field:
    delta_weight_sync and its sync_dir), it is read with the command line's other settings of that section
    (`others`, canonical overrides), as SkyRL reads the whole command line: one line for the section."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from rllm_sweeps.config.native import skyrl_reading, skyrl_reading_of
    from rllm_sweeps.config.override_values import format_value

    try:
        parsed = OverridesParser.create().parse_override(line)
    except Exception:
        return None  # Hydra reports the syntax
    if parsed.is_sweep_override() or parsed.is_delete():
        return None
    rel = parsed.key_or_group[len(SKYRL_TRAIN_PREFIX) :]
    value = parsed.value()
    typed_key = typed.partition("=")[0]
    for path in moved_paths(rel):
        if path in native_paths():
            _say(notify, f"note: SkyRL 0.4 moved {typed_key} to {path}; using {SKYRL_TRAIN_PREFIX}{path}")
            return [f"{SKYRL_TRAIN_PREFIX}{path}={line.partition('=')[2]}"]
    for path in [rel, *moved_paths(rel)]:
        siblings = _section_siblings(path, others)
        reading = skyrl_reading_of({**siblings, path: value}) if siblings else skyrl_reading(path, value)
        if reading.kind != "accepted":
            continue
        if not reading.changed:
            _say(notify, f"note: SkyRL 0.4 accepts {typed_key}={value!r}, which changes nothing in its config: removed")
            return []
        # Overrides that take the place of the typed one: each value written to parse back as SkyRL read it.
        sections = _whole_sections(reading.changed)
        lines = [f"{k}={format_value(v)}" for k, v in sections.items()]
        if list(sections) != ["++" + parsed.key_or_group] or sections["++" + parsed.key_or_group] != value:
            _say(notify, f"note: SkyRL 0.4 reads {typed_key} as {', '.join(lines)}")
        return lines
    return None


def _section_siblings(path: str, others: list[str]) -> dict[str, Any]:
    """The other settings of `path`'s section on the command line (relative to skyrl.train, as values),
    where that section is null in SkyRL's defaults (an optional dataclass)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from rllm_sweeps.config.native import skyrl_train_defaults
    from rllm_sweeps.plain_tree import plain_get_or_none

    section = path.rpartition(".")[0]
    if not section or plain_get_or_none(skyrl_train_defaults(), section) is not None:
        return {}
    found: dict[str, Any] = {}
    for other in others:
        written = split_override(other)
        key = written.key
        rel = key.removeprefix(SKYRL_TRAIN_PREFIX)
        if key.startswith(SKYRL_TRAIN_PREFIX) and rel.startswith(section + ".") and rel != path and not written.deletes:
            try:
                found[rel] = OverridesParser.create().parse_override(f"{key}={written.value}").value()
            except Exception:
                continue
    return found


def _whole_sections(changed: dict[str, Any]) -> dict[str, Any]:
    """SkyRL's changed leaves as overrides: the leaves of a section SkyRL leaves null by default (an optional
    one such as generator.inference_engine.delta_weight_sync) go as one dictionary, which `++` puts in place
    of the null (its leaves do not exist in the composed config before)."""
    from rllm_sweeps.config.native import skyrl_train_defaults
    from rllm_sweeps.plain_tree import plain_get_or_none

    out: dict[str, Any] = {}
    absent = object()
    for key, value in changed.items():
        parts = key.split(".")
        section = next(
            (
                ".".join(parts[:i])
                for i in range(1, len(parts))
                if plain_get_or_none(skyrl_train_defaults(), ".".join(parts[:i]), absent) is None
            ),
            None,
        )
        if section is None:
            # a key of a free-form dictionary may be new to the composed tree: added or set (`++`)
            out[("++" if _in_free_form(SKYRL_TRAIN_PREFIX + key) else "") + SKYRL_TRAIN_PREFIX + key] = value
        else:
            node = out.setdefault("++" + SKYRL_TRAIN_PREFIX + section, {})
            *inner, leaf = parts[len(section.split(".")) :]
            for part in inner:
                node = node.setdefault(part, {})
            node[leaf] = value
    return out


def _say(notify: Callable[[str], None] | None, message: str) -> None:
    if notify is not None:
        notify(message)


def canonical_override(override: str) -> str:
    if "=" not in override:
        return override  # not an override (Hydra reports it)
    written = split_override(override)
    prefix, key = written.prefix, written.key
    if not key or key.startswith("hydra") or any(c in key for c in " @"):
        return override  # hydra's own keys; `group@package` forms stay Hydra's
    canonical = canonical_key(key)
    if canonical == key and not prefix and key in native_paths():
        canonical = _dual_path_spelling(key, override)
    if prefix == "+" and _is_leaf(canonical):
        prefix = ""  # rLLM adds keys its own tree lacks; this tree has the setting: set it
    if "~" not in prefix and _in_free_form(canonical):
        prefix = "++"  # a dictionary SkyRL takes whole: add or set any key (config/free_form.py)
    value = written.value
    if canonical.startswith(SKYRL_TRAIN_PREFIX) and "~" not in prefix:
        value = _as_skyrl_parses_it(value)
    if canonical == key and prefix == written.prefix and value == written.value:
        return override
    return f"{prefix}{canonical}={value}"


def _as_skyrl_parses_it(value: str) -> str:
    """A SkyRL-native value as SkyRL's command line reads it (OmegaConf.from_cli: YAML) where Hydra's
    grammar reads it otherwise or not at all: `key=` is null to SkyRL (Hydra: ''), and a YAML/JSON
    dictionary or list (`{"gdn_prefill_backend": "triton"}`) is no Hydra value; both are written in
    Hydra's syntax for the value SkyRL reads. Anything else is left as typed."""
    if value and value.lstrip()[:1] not in ("{", "["):
        return value
    from omegaconf import OmegaConf

    from rllm_sweeps.config.override_values import format_value

    if value:
        from hydra.core.override_parser.overrides_parser import OverridesParser

        try:
            OverridesParser.create().parse_override(f"k={value}")
            return value  # Hydra's own syntax
        except Exception:
            pass
    try:
        read = OmegaConf.to_container(OmegaConf.from_cli([f"k={value}"]))["k"]
        return format_value(read)
    except Exception:
        return value  # neither reads it: Hydra reports the syntax


def _is_leaf(key: str) -> bool:
    """A setting (not a config group such as sweep or task, nor a section) either tree has."""
    paths = native_paths() if key.startswith(SKYRL_TRAIN_PREFIX) else common_paths()
    rel = key.removeprefix(SKYRL_TRAIN_PREFIX)
    return rel in paths and not any(p.startswith(rel + ".") for p in paths) and "." in rel


def _in_free_form(key: str) -> bool:
    """`key` is one of SkyRL's free-form dictionaries or lies in one."""
    from rllm_sweeps.config.free_form import free_form_root
    from rllm_sweeps.config.native import skyrl_free_form

    if not key.startswith(SKYRL_TRAIN_PREFIX):
        return False
    return free_form_root(key.removeprefix(SKYRL_TRAIN_PREFIX), skyrl_free_form()) is not None


def _exists(key: str) -> bool:
    if key.startswith(SKYRL_TRAIN_PREFIX):
        return key[len(SKYRL_TRAIN_PREFIX) :] in native_paths()
    return key in common_paths()


def _dual_path_spelling(key: str, override: str) -> str:
    """For a path both trees have: SkyRL's key when the value is SkyRL's spelling, not ours."""
    from rllm_sweeps.config.rules import RULES
    from rllm_sweeps.keymap import BY_NATIVE

    mapping = BY_NATIVE.get(SKYRL_TRAIN_PREFIX + key)
    if mapping is None or mapping.common != key or key not in RULES:
        return key
    try:
        from hydra.core.override_parser.overrides_parser import OverridesParser

        parsed = OverridesParser.create().parse_override(override)
        if parsed.is_sweep_override():
            return key
        value = parsed.value()
        if RULES[key](value) is None:
            return key  # our spelling
        if RULES[key](mapping.common_value(value)) is None:
            return SKYRL_TRAIN_PREFIX + key  # SkyRL's spelling: reconciliation translates it
    except Exception:
        pass  # not parseable, or not translatable: validation reports it under our name
    return key


def canonical_sweep_node(data: dict[str, Any]) -> dict[str, Any]:
    """A sweep file's node with the keys it names (parameters, zip, seed_key) spelled canonically."""
    out = dict(data)
    params = out.get("parameters")
    if isinstance(params, dict):
        out["parameters"] = {_canonical_prefixed(str(k)): v for k, v in params.items()}
    if isinstance(out.get("zip"), list):
        out["zip"] = [
            [canonical_key(k) if isinstance(k, str) else k for k in g] if isinstance(g, list) else g for g in out["zip"]
        ]
    if isinstance(out.get("seed_key"), str):
        out["seed_key"] = canonical_key(out["seed_key"])
    return out


def _canonical_prefixed(key: str) -> str:
    prefix, bare = split_prefix(key)
    return prefix + canonical_key(bare)


__all__ = [
    "canonical_sweep_node",
    "canonical_key",
    "canonical_override",
    "canonical_overrides",
    "common_paths",
    "native_paths",
]
