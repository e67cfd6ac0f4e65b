"""Tables and small syntax helpers of the cell scan: magics, readers, writers, scopes.

Which calls are pure or mutating is in ``analysis.effects`` (the one effects table); this module adds
what only the scan needs: which line magics touch files or modules, which functions read a file path,
which context managers never swallow an exception.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from crane_lsp.analysis.effects import (
    DYNAMIC_CODE_CALLS,
    HIGHER_ORDER_BUILTINS,
    MUTATING_METHODS,
    NAMESPACE_CALLS,
    PANDAS_INPLACE_ONLY,
    PURE_BUILTINS,
)
from crane_lsp.analysis.kinds import ScopeKind
from crane_lsp.analysis.values import chain_parts as _chain_parts


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: Cell magics whose body is ordinary Python run in the user namespace.
_PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun"})
#: Line magics that change nothing the checks rely on.
_HARMLESS_LINE_MAGICS = _words(
    """
    matplotlib config load_ext time timeit pinfo pinfo2 psource pdoc who whos who_ls pwd history
    precision autoreload aimport env lsmagic magic page pprint xmode ls pdef psearch prun pylab
    """
)
_FILE_LINE_MAGICS = frozenset({"cd", "mkdir", "cp", "mv", "rm", "sx", "system", "bookmark", "writefile"})
_MODULE_LINE_MAGICS = frozenset({"pip", "conda", "mamba", "uv"})

_READER_FUNCS = _words(
    """
    read_csv read_excel read_json read_parquet read_table read_pickle read_feather read_hdf
    read_fwf read_stata read_sas read_spss read_orc read_xml load loadtxt genfromtxt fromfile
    listdir scandir imread load_img read_image read_file read_text read_bytes walk
    """
)
_PATH_KEYWORDS = ("filepath_or_buffer", "path", "io", "fname", "file", "filename", "fp", "path_or_buf")
_OPEN_FUNCS = frozenset({"open", "io.open", "Image.open", "PIL.Image.open", "codecs.open"})

# the effects of calls: one table for the cell analysis, the checks' walk and the dry-run screen
_MUTATING_METHODS = MUTATING_METHODS
_PANDAS_INPLACE_ONLY = PANDAS_INPLACE_ONLY
_PURE_BUILTINS = PURE_BUILTINS | HIGHER_ORDER_BUILTINS
_DYNAMIC_FUNCS = DYNAMIC_CODE_CALLS - {"compile"} | NAMESPACE_CALLS  # ``compile`` only builds code
_FILE_METHODS = _words(
    """
    system run call check_call check_output Popen urlretrieve download download_file extract
    extractall unpack_archive copy copy2 copyfile copytree move rename replace mkdir makedirs chdir
    symlink link remove unlink rmtree rmdir touch write write_text write_bytes writelines save
    savez savez_compressed savetxt savefig dump to_csv to_excel to_json to_parquet to_pickle
    to_feather to_hdf to_sql to_string to_html to_markdown to_latex to_xml save_weights save_model
    imwrite tofile get_file load_dataset snapshot_download hf_hub_download flow_from_directory cd
    getoutput competition_download_files dataset_download_files
    """
)


_OPERATORS: dict[type[ast.operator], str] = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
    ast.Pow: "**", ast.MatMult: "@", ast.LShift: "<<", ast.RShift: ">>", ast.BitOr: "|",
    ast.BitAnd: "&", ast.BitXor: "^",
}  # fmt: skip


#: Context managers known to let exceptions through (``__exit__`` returns a false value).
_PASS_THROUGH_CONTEXTS = _words(
    """
    open no_grad enable_grad inference_mode set_grad_enabled autocast GradientTape catch_warnings
    option_context context device name_scope scope TemporaryDirectory NamedTemporaryFile Pool
    ThreadPoolExecutor ProcessPoolExecutor tqdm redirect_stdout redirect_stderr start_run errstate
    printoptions profile record_function ZipFile File Timer timer stream
    """
)


def _never_suppresses(node: ast.AST) -> bool:
    func = node.func if isinstance(node, ast.Call) else node
    parts = _chain_parts(func)
    return parts is not None and parts[-1] in _PASS_THROUGH_CONTEXTS


_LEAVES = (ast.Break, ast.Continue, ast.Return, ast.Raise, ast.Try, ast.Yield, ast.YieldFrom, ast.Await)


def _non_empty(node: ast.expr) -> bool:
    """A ``for`` iterable that certainly yields an item: a non-empty literal, or ``range`` of int literals."""
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return bool(node.elts) and not any(isinstance(e, ast.Starred) for e in node.elts)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return bool(node.value)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range":
        args = [a.value if isinstance(a, ast.Constant) and type(a.value) is int else None for a in node.args]
        if node.keywords or not 1 <= len(args) <= 3 or None in args:
            return False
        try:
            return len(range(*args)) > 0  # type: ignore[arg-type]
        except ValueError:
            return False
    return False


def _bound_in(body: list[ast.stmt]) -> set[str]:
    """Names a block binds in its own scope (not descending into nested scopes)."""
    out: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.add(node.name)
            for d in node.decorator_list:
                visit(d)
            return
        if isinstance(node, ast.Lambda):
            return
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            out.add(node.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                out.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and node.name:
            out.add(node.name)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp):
                for sub in ast.walk(child):
                    if isinstance(sub, ast.NamedExpr) and isinstance(sub.target, ast.Name):
                        out.add(sub.target.id)
                continue
            visit(child)

    for stmt in body:
        visit(stmt)
    return out


@dataclass
class _Scope:
    kind: ScopeKind
    local: set[str] = field(default_factory=set)
    globals_declared: set[str] = field(default_factory=set)
    free: set[str] = field(default_factory=set)  # module names this (function) scope uses
