"""Constraints: expressions over config keys that drop points from a sweep plan.

    rollout.n * data.train_batch_size <= 512
    trainer.mini_batch_size <= data.train_batch_size and algorithm.adv_estimator != "rloo"

An expression is parsed with `ast` and checked against a whitelist (arithmetic,
comparisons, `and`/`or`/`not`, `x if c else y`, literals, a few pure functions) before
anything is evaluated; evaluation walks that tree itself. Nothing is `eval`-ed, and a
name can only ever be a config key: `rollout.n` reads the point's value of `rollout.n`.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Lookup = Callable[[str], Any]

_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type, Callable[[Any], Any]] = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_}
_COMPARE: dict[type, Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "abs": abs,
    "min": min,
    "max": max,
    "round": round,
    "int": int,
    "float": float,
    "len": len,
    "log": math.log,
    "log2": math.log2,
    "log10": math.log10,
    "sqrt": math.sqrt,
}
# YAML spellings of the constants, so a constraint reads like the config it talks about.
_CONSTANTS = {"true": True, "false": False, "null": None, "True": True, "False": False, "None": None}
_MAX_EXPONENT = 1024


class ConstraintSyntaxError(ValueError):
    """The expression is not a constraint (bad syntax or a construct outside the whitelist)."""


class ConstraintEvalError(ValueError):
    """The expression failed on a point's values (type error, division by zero, ...)."""


def _key_of(node: ast.expr) -> str | None:
    """`rollout.n` arrives as Attribute(Name('rollout'), 'n'): the dotted key, or None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


@dataclass(frozen=True)
class Constraint:
    """One parsed, whitelisted constraint. `keys` are the config keys it reads."""

    text: str
    keys: tuple[str, ...]
    _tree: ast.expr = field(repr=False, compare=False)
    source: str = field(default="", compare=False)  # where it was written, for messages
    _spelled: dict[str, str] = field(default_factory=dict, repr=False, compare=False)  # as typed -> key

    @classmethod
    def parse(cls, text: str, source: str = "", spell: Callable[[str], str] | None = None) -> Constraint:
        """`spell`: a name as typed -> its config key (rLLM's `rllm.rollout.n` is `rollout.n`)."""
        if not isinstance(text, str) or not text.strip():
            raise ConstraintSyntaxError(f"a constraint is an expression in a string, got {text!r}")
        try:
            tree = ast.parse(text.strip(), mode="eval").body
        except SyntaxError as err:
            raise ConstraintSyntaxError(f"not an expression ({err.msg})") from None
        keys: list[str] = []
        _check(tree, keys)
        spelled = {k: spell(k) for k in keys} if spell is not None else {}
        keys = [spelled.get(k, k) for k in keys]
        return cls(text=text.strip(), keys=tuple(dict.fromkeys(keys)), _tree=tree, source=source, _spelled=spelled)

    def holds(self, lookup: Lookup) -> bool:
        """True if the point (whose values `lookup` returns by key) satisfies the constraint."""
        if self._spelled:
            typed_lookup, spelled = lookup, self._spelled
            lookup = lambda key: typed_lookup(spelled.get(key, key))  # noqa: E731
        try:
            value = _eval(self._tree, lookup)
        except ConstraintEvalError:
            raise
        except (ArithmeticError, TypeError, ValueError) as err:
            raise ConstraintEvalError(f"{type(err).__name__}: {err}") from None
        if not isinstance(value, bool):
            raise ConstraintEvalError(f"must be true or false (a comparison), got {value!r}")
        return value


def _check(node: ast.AST, keys: list[str]) -> None:
    """Reject everything outside the whitelist; collect the config keys named."""
    if isinstance(node, ast.Attribute | ast.Name):
        key = _key_of(node)  # type: ignore[arg-type]
        if key is None or any(part.startswith("__") for part in key.split(".")):
            raise ConstraintSyntaxError(f"'{ast.unparse(node)}' is not a config key")
        if key not in _CONSTANTS:
            keys.append(key)
        return
    if isinstance(node, ast.Constant):
        if not isinstance(node.value, int | float | str | bool | type(None)):
            raise ConstraintSyntaxError(f"unsupported literal {node.value!r}")
        return
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        children: list[ast.AST] = [node.left, node.right]
    elif isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        children = [node.operand]
    elif isinstance(node, ast.BoolOp):
        children = list(node.values)
    elif isinstance(node, ast.Compare) and all(type(op) in _COMPARE for op in node.ops):
        children = [node.left, *node.comparators]
    elif isinstance(node, ast.IfExp):
        children = [node.test, node.body, node.orelse]
    elif isinstance(node, ast.Tuple | ast.List):
        children = list(node.elts)
    elif isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS or node.keywords:
            allowed = ", ".join(FUNCTIONS)
            raise ConstraintSyntaxError(f"'{ast.unparse(node)}': the only calls allowed are {allowed} (no keywords)")
        children = list(node.args)
    else:
        what = type(node).__name__
        raise ConstraintSyntaxError(
            f"'{ast.unparse(node)}' ({what}) is not allowed: use config keys, numbers, strings, "
            "arithmetic, comparisons, and/or/not"
        )
    for child in children:
        if isinstance(child, ast.Starred):
            raise ConstraintSyntaxError(f"'{ast.unparse(child)}' is not allowed")
        _check(child, keys)


def _number(value: Any, node: ast.AST) -> Any:
    # Arithmetic on numbers only: "ab" * 10**9 is not a constraint, it is a memory bomb.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConstraintEvalError(f"'{ast.unparse(node)}' is {value!r}: arithmetic needs numbers")
    return value


def _eval(node: ast.AST, lookup: Lookup) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Attribute | ast.Name):
        key = _key_of(node)  # type: ignore[arg-type]
        assert key is not None
        return _CONSTANTS[key] if key in _CONSTANTS else lookup(key)
    if isinstance(node, ast.BinOp):
        left = _number(_eval(node.left, lookup), node.left)
        right = _number(_eval(node.right, lookup), node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > _MAX_EXPONENT:
            raise ConstraintEvalError(f"exponent {right!r} is too large")
        return _BINOPS[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp):
        operand = _eval(node.operand, lookup)
        if not isinstance(node.op, ast.Not):
            operand = _number(operand, node.operand)
        return _UNARY[type(node.op)](operand)
    if isinstance(node, ast.BoolOp):
        is_and = isinstance(node.op, ast.And)
        result: Any = is_and
        for child in node.values:
            result = _eval(child, lookup)
            if bool(result) != is_and:
                return result
        return result
    if isinstance(node, ast.Compare):
        left = _eval(node.left, lookup)
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            right = _eval(comparator, lookup)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.IfExp):
        return _eval(node.body if _eval(node.test, lookup) else node.orelse, lookup)
    if isinstance(node, ast.Tuple):
        return tuple(_eval(e, lookup) for e in node.elts)
    if isinstance(node, ast.List):  # a list, so that `trainer.adam_betas == [0.9, 0.99]` compares as in YAML
        return [_eval(e, lookup) for e in node.elts]
    if isinstance(node, ast.Call):
        assert isinstance(node.func, ast.Name)
        return FUNCTIONS[node.func.id](*(_eval(a, lookup) for a in node.args))
    raise ConstraintSyntaxError(f"'{ast.unparse(node)}' is not allowed")  # unreachable after _check
