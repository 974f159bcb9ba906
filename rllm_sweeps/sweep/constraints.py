"""Constraints: expressions over config keys that drop points from a sweep plan.

    rollout.n * data.train_batch_size <= 512
    trainer.mini_batch_size <= data.train_batch_size and algorithm.adv_estimator != "rloo"

An expression is parsed with `ast` and checked against a whitelist (arithmetic,
comparisons, `and`/`or`/`not`, `x if c else y`, literals, a few pure functions) before
anything is evaluated; the checked tree is then turned into a tree of small Python
closures, once per constraint (a plan may test it on 100,000 points). Nothing is
`eval`-ed, and a name can only ever be a config key: `rollout.n` reads the point's value
of `rollout.n`.
"""

from __future__ import annotations

import ast
import functools
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

    @functools.cached_property
    def _evaluate(self) -> Callable[[Lookup], Any]:
        return _compile(self._tree, self._spelled)

    def __getstate__(self) -> dict[str, Any]:  # closures do not pickle; they are rebuilt on use
        state = dict(self.__dict__)
        state.pop("_evaluate", None)
        return state

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
        try:
            value = self._evaluate(lookup)
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


def _compile(node: ast.AST, spelled: dict[str, str]) -> Callable[[Lookup], Any]:
    """The checked tree as closures: lookup -> value, with the same rules at every node as
    the whitelist promises (arithmetic on numbers only, bounded exponents, short-circuits)."""
    if isinstance(node, ast.Constant):
        constant = node.value
        return lambda lookup: constant
    if isinstance(node, ast.Attribute | ast.Name):
        name = _key_of(node)  # type: ignore[arg-type]
        assert name is not None
        if name in _CONSTANTS:
            value = _CONSTANTS[name]
            return lambda lookup: value
        key = spelled.get(name, name)
        return lambda lookup: lookup(key)
    if isinstance(node, ast.BinOp):
        left, right = _compile(node.left, spelled), _compile(node.right, spelled)
        op, left_node, right_node = _BINOPS[type(node.op)], node.left, node.right
        is_pow = isinstance(node.op, ast.Pow)

        def binop(lookup: Lookup) -> Any:
            a = _number(left(lookup), left_node)
            b = _number(right(lookup), right_node)
            if is_pow and abs(b) > _MAX_EXPONENT:
                raise ConstraintEvalError(f"exponent {b!r} is too large")
            return op(a, b)

        return binop
    if isinstance(node, ast.UnaryOp):
        operand, unary, operand_node = _compile(node.operand, spelled), _UNARY[type(node.op)], node.operand
        if isinstance(node.op, ast.Not):
            return lambda lookup: unary(operand(lookup))
        return lambda lookup: unary(_number(operand(lookup), operand_node))
    if isinstance(node, ast.BoolOp):
        values = [_compile(child, spelled) for child in node.values]
        is_and = isinstance(node.op, ast.And)

        def boolop(lookup: Lookup) -> Any:
            result: Any = is_and
            for value in values:
                result = value(lookup)
                if bool(result) != is_and:
                    return result
            return result

        return boolop
    if isinstance(node, ast.Compare):
        first = _compile(node.left, spelled)
        rest = [(_COMPARE[type(op)], _compile(c, spelled)) for op, c in zip(node.ops, node.comparators, strict=True)]

        def compare(lookup: Lookup) -> bool:
            left = first(lookup)
            for op, comparator in rest:
                right = comparator(lookup)
                if not op(left, right):
                    return False
                left = right
            return True

        return compare
    if isinstance(node, ast.IfExp):
        test, body, orelse = (_compile(n, spelled) for n in (node.test, node.body, node.orelse))
        return lambda lookup: body(lookup) if test(lookup) else orelse(lookup)
    if isinstance(node, ast.Tuple):
        elts = [_compile(e, spelled) for e in node.elts]
        return lambda lookup: tuple(e(lookup) for e in elts)
    if isinstance(node, ast.List):  # a list, so that `trainer.adam_betas == [0.9, 0.99]` compares as in YAML
        elts = [_compile(e, spelled) for e in node.elts]
        return lambda lookup: [e(lookup) for e in elts]
    if isinstance(node, ast.Call):
        assert isinstance(node.func, ast.Name)
        function, args = FUNCTIONS[node.func.id], [_compile(a, spelled) for a in node.args]
        return lambda lookup: function(*(a(lookup) for a in args))
    raise ConstraintSyntaxError(f"'{ast.unparse(node)}' is not allowed")  # unreachable after _check
