"""What measured code may use: the allow-list's data, ``AllowList``, and the size-limited parse of a cell.

The rules only; :mod:`.check` applies them to one function and :mod:`.extract` cuts that function out
of its cell and loads it. The node types, names and attributes listed here are the whole of what a
measured function may hold (see the package's docstring for what each list is for).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from course_grader.errors import AllowListError

from ..parsing import parse

MAX_SOURCE_CHARS = 1_000_000   # comments count here and cost nothing later; the node and depth limits bound the code
MAX_NODES = 6_000
MAX_DEPTH = 60
MAX_CONSTANT_CHARS = 5_000

SAFE_BUILTINS = frozenset({
    "abs", "all", "any", "bool", "dict", "divmod", "enumerate", "filter", "float", "frozenset", "int",
    "isinstance", "iter", "len", "list", "map", "max", "min", "next", "pow", "print", "range", "repr",
    "reversed", "round", "set", "slice", "sorted", "str", "sum", "tuple", "zip",
    "ArithmeticError", "AssertionError", "Exception", "IndexError", "KeyError", "NotImplementedError",
    "RuntimeError", "StopIteration", "TypeError", "ValueError", "ZeroDivisionError",
})

# Named in messages because they are the usual ways around an allow-list.
FORBIDDEN_NAMES = frozenset({
    "getattr", "setattr", "delattr", "hasattr", "globals", "locals", "vars", "dir", "exec", "eval",
    "compile", "__import__", "open", "input", "breakpoint", "type", "object", "super", "memoryview",
    "classmethod", "staticmethod", "property", "id", "help", "exit", "quit", "__builtins__",
})
FORBIDDEN_ATTRIBUTES = frozenset({"format", "format_map"})  # "{0._x}".format(obj) reads attributes by name
# Attributes without a `_` that lead from a running generator, coroutine, traceback or frame to frames, code and
# globals: `(g.gi_frame.f_back.f_globals for _ in [0])` reaches the module that called the measured function,
# with its real builtins and every module. No exercise needs them.
FRAME_ATTRIBUTES = frozenset({
    "gi_frame", "gi_code", "gi_yieldfrom", "gi_suspended", "cr_frame", "cr_code", "cr_await", "cr_origin",
    "ag_frame", "ag_code", "ag_await", "tb_frame", "tb_next", "f_back", "f_globals", "f_locals", "f_builtins",
    "f_code", "f_trace", "co_code", "co_consts", "co_names", "co_varnames", "co_freevars", "co_cellvars",
})
# Ways to a tensor's memory that torch's version counter (its count of in-place writes, `_version`) does not see:
# `x.data`, `x.numpy()` (and `torch.from_numpy` or `torch.frombuffer` over it), `set_`, a tensor's storage, dlpack,
# and the in-place methods torch does not count (`apply_`, `map_`) or the splits it does not track (`unsafe_split`).
# A write through one changes x unseen, and can put it back before anyone looks: ex05's stopwatch knows that a
# timed call ran on the x the routine was given from x's version and memory (compile_course.stopwatch). Found by
# trying every torch.Tensor method and torch function of torch 2.14.1 on a tensor: these are all the ones that
# write it, or hand out its memory, without a version bump (`copy.copy(x)` too: check refuses it by identity,
# since `d.copy()` of a dict is honest). No exercise needs them: `.detach()` and `.clone()` are counted.
ALIASING_ATTRIBUTES = frozenset({
    "data", "numpy", "from_numpy", "frombuffer", "from_dlpack", "to_dlpack", "set_", "untyped_storage", "storage",
    "apply_", "map_", "map2_", "unsafe_split", "unsafe_chunk", "unsafe_split_with_sizes",
})
# The torch.fx graph a callable `torch.compile(..., backend=f)` (or an inductor pass in `options=`) is handed:
# its nodes' names and targets are pasted into Python source that `recompile()` execs with the real builtins
# (`g.call_method('x", 0) or __import__("os")... or ("', ...)`), so measured code may not build, change or
# regenerate one. No exercise needs them.
FX_ATTRIBUTES = frozenset({
    "graph", "owning_module", "recompile", "python_code", "create_node", "placeholder", "call_method",
    "call_module", "call_function", "get_attr", "inserting_before", "inserting_after", "node_copy", "graph_copy",
    "add_submodule", "to_folder", "on_generate_code", "set_codegen",
})

ALLOWED_NODES = (
    ast.Module, ast.FunctionDef, ast.arguments, ast.arg, ast.Lambda, ast.Return, ast.Pass, ast.Expr,
    ast.Assign, ast.AugAssign, ast.AnnAssign, ast.NamedExpr, ast.For, ast.While, ast.If, ast.Break,
    ast.Continue, ast.With, ast.withitem, ast.Try, ast.ExceptHandler, ast.Raise, ast.Assert,
    ast.Import, ast.ImportFrom, ast.alias,
    ast.BoolOp, ast.BinOp, ast.UnaryOp, ast.Compare, ast.IfExp, ast.Call, ast.keyword,
    ast.Attribute, ast.Subscript, ast.Slice, ast.Name, ast.Constant, ast.Starred,
    ast.List, ast.Tuple, ast.Dict, ast.Set, ast.JoinedStr, ast.FormattedValue,
    ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.comprehension,
    ast.Load, ast.Store,
    ast.And, ast.Or, ast.Add, ast.Sub, ast.Mult, ast.MatMult, ast.Div, ast.Mod, ast.Pow, ast.LShift,
    ast.RShift, ast.BitOr, ast.BitXor, ast.BitAnd, ast.FloorDiv, ast.Invert, ast.Not, ast.UAdd,
    ast.USub, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Is, ast.IsNot, ast.In, ast.NotIn,
)
# how a rejected node is named in a message (others: by their class name)
NODE_NAMES = {
    ast.Global: "`global`", ast.Nonlocal: "`nonlocal`",
    ast.ClassDef: "a class definition", ast.AsyncFunctionDef: "`async def`", ast.Await: "`await`",
    ast.Yield: "`yield`", ast.YieldFrom: "`yield from`", ast.Delete: "`del`", ast.Match: "`match`",
    ast.AsyncFor: "`async for`", ast.AsyncWith: "`async with`",
}


@dataclass(frozen=True)
class AllowList:
    """What one exercise's measured function may use, beyond the safe core."""

    provided: frozenset[str] = frozenset()   # names the harness supplies (torch, nn, Case, ...)
    dotted: frozenset[str] = frozenset()     # exact dotted paths allowed despite "_" ("torch._dynamo.reset")
    imports: frozenset[str] = frozenset()    # modules that `import` may name inside the function
    classes: bool = False                    # nested class definitions
    builtins: frozenset[str] = field(default=SAFE_BUILTINS)

    def names(self) -> frozenset[str]:
        return self.provided | self.builtins

    def module_roots(self) -> dict[str, str]:
        """The provided or importable names that are modules, with the module each one names."""
        return {n: MODULE_PATHS[n] for n in sorted(self.provided | self.imports) if n in MODULE_PATHS}


def for_cell(provided, imports, allow) -> AllowList:
    """A solution cell's allow-list: the names the exercise provides, the modules `import` may name, and
    the cell's ``allow`` entries (dotted names such as ``torch._dynamo.mark_dynamic``; builtin names).
    The grader builds it from the exercise, the measuring child again from what the grader sent."""
    return AllowList(provided=frozenset(provided), imports=frozenset(imports),
                     dotted=frozenset(a for a in allow if "." in a),
                     builtins=SAFE_BUILTINS | frozenset(a for a in allow if "." not in a))


# Provided names that are modules, and the module each names. Every attribute chain rooted at
# one of them is resolved by walking the real attributes (see ``check.resolve_chain``).
MODULE_PATHS = {"torch": "torch", "nn": "torch.nn", "time": "time", "copy": "copy"}
# The parts of torch no chain may reach (``torch.hub``, ``torch.load``, ``torch.fx`` ...) are in
# ``harness.denied`` (``MEASURED_PATHS``), one table with the parts a replayed graph may not call. A solution
# cell's ``allow`` list may name one exact path below a denied part (ex09 allows ``torch.library.custom_op``):
# that path, and the steps leading to it, are then resolved as usual.


def strip_magics(code: str) -> str:
    """IPython magics and shell escapes (``%time``, ``!ls``) are not Python: each such line becomes ``pass``."""
    lines = []
    for line in code.splitlines():
        s = line.lstrip()
        lines.append(line[: len(line) - len(s)] + "pass" if s.startswith(("%", "!")) else line)
    return "\n".join(lines)


def parse_source(source: str, where: str) -> ast.Module:
    """``ast.parse`` with a size limit; every failure becomes an ``AllowListError``-like message."""
    if not isinstance(source, str):
        raise AllowListError(f"{where}: the cell has no text")
    if len(source) > MAX_SOURCE_CHARS:
        raise AllowListError(f"{where}: the cell is longer than {MAX_SOURCE_CHARS} characters")
    try:
        return parse(strip_magics(source))
    except SyntaxError as exc:
        raise AllowListError(f"{where}: syntax error on line {exc.lineno}: {exc.msg}") from None
    except UnicodeError:
        raise AllowListError(f"{where}: line {_unencodable_line(source)} holds a character that cannot be encoded "
                             "(a lone surrogate such as \\udc80): delete it or write it as an escape") from None
    except (RecursionError, MemoryError, ValueError):
        raise AllowListError(f"{where}: the cell cannot be parsed (nested too deeply, or too large)") from None


def _unencodable_line(source: str) -> int | str:
    for number, line in enumerate(source.splitlines(), 1):
        try:
            line.encode("utf-8")
        except UnicodeError:
            return number
    return "?"


def check_size(tree: ast.AST, where: str) -> None:
    """Raise ``AllowListError`` when ``tree`` has more than ``MAX_NODES`` nodes or nests deeper than ``MAX_DEPTH``."""
    count, stack = 0, [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        count += 1
        if count > MAX_NODES:
            raise AllowListError(f"{where}: the code has more than {MAX_NODES} syntax nodes")
        if depth > MAX_DEPTH:
            raise AllowListError(f"{where}: the code is nested more than {MAX_DEPTH} levels deep")
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
