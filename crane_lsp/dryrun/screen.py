"""The safe-mode screen: cells the jail would only stop are not dry-run in ``safe`` mode.

Read from the cell's facts alone (deletes, sockets, shells, stdin, dynamic code, magics that run
code): a cell that would be stopped at its first delete gains nothing from a fork. A cell that only
saves files (``df.to_csv``, ``plt.savefig``, ``open(p, 'w')``, ``os.makedirs``) passes: the jail
keeps what it writes in the copy's memory (``jail_writes``), so the run goes on past the save.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any

from crane_lsp.analysis.effects import DYNAMIC_CODE_CALLS
from crane_lsp.analysis.facts import CellFacts
from crane_lsp.analysis.parse import analyze, analyze_whole


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: The static screen of ``safe`` mode. The jail stops deletes, network and shell whatever calls them;
#: the screen only spares a fork for a cell that looks like it writes outside a file of its own
#: (a database, a remote store, a deletion), talks to the network or the shell, or waits for a
#: person (the jail would stop it at once). Matched on the called name's last attribute
#: (``df.to_sql`` -> ``to_sql``); deliberately generous (a cell screened out only loses its dry run)
#: but not so generous that ordinary data-science cells (``df.replace``, ``df.rename``,
#: ``items.remove``, ``platform.system()``) are screened out. Saving a file (``to_csv``, ``savefig``,
#: ``np.save``, ``open(p, 'w')``) is not among them: the jail keeps the file in the copy's memory.
_WRITER_METHODS = _words(
    """
    to_sql to_clipboard to_gbq write_database write_delta saveAsTable saveAsTextFile insertInto
    write_image log_artifact log_model push_to_hub create_file_writer SummaryWriter TFRecordWriter
    unlink rmtree rmdir symlink_to copytree chmod commit upload upload_file
    """
)
#: Functions that only write or delete when they belong to ``os``/``shutil``/``pathlib`` (as methods
#: of other objects they are ordinary: ``df.replace``, ``df.rename``, ``items.remove``).
_OS_WRITERS = frozenset(
    {"remove", "rename", "renames", "replace", "removedirs", "link", "symlink", "truncate"}
)
_OS_ROOTS = frozenset({"os", "shutil", "pathlib", "Path"})
_NETWORK_METHODS = _words(
    """
    urlopen urlretrieve download download_file from_pretrained hf_hub_download snapshot_download
    load_dataset get_file fetch_openml fetch_california_housing fetch_20newsgroups
    fetch_20newsgroups_vectorized fetch_lfw_people fetch_lfw_pairs fetch_covtype fetch_kddcup99
    fetch_olivetti_faces fetch_rcv1 fetch_species_distributions load_data DataReader create_engine
    connect
    """
)
_SHELL_CALLS = frozenset({"os.system", "os.popen", "os.execv", "os.execvp", "os.spawnl", "pty.spawn"})
_STDIN_CALLS = frozenset({"input", "getpass", "getpass.getpass", "breakpoint", "fileinput.input"})
_DYNAMIC_CALLS = DYNAMIC_CODE_CALLS  # the one effects table (analysis/effects.py)
_NETWORK_MODULES = _words(
    """
    requests urllib urllib3 httpx aiohttp socket smtplib ftplib paramiko boto3 botocore wandb mlflow
    comet_ml neptune kaggle kagglehub gdown wget openai anthropic tweepy praw yfinance pandas_datareader
    selenium webbrowser gcsfs s3fs huggingface_hub psycopg2 pymysql pymongo redis sqlalchemy sqlite3 ray
    dask.distributed
    """
)
_SHELL_MODULES = frozenset({"subprocess", "shutil", "pexpect", "sh", "multiprocessing"})
_WRITER_MODULES = frozenset({"tf.io", "tensorflow.io", "tf.summary", "tensorflow.summary", "tf.saved_model"})
_URL = re.compile(r"^\s*(https?|ftp|s3|s3a|gs|gcs|hf|az|abfs|abfss|hdfs)://", re.IGNORECASE)
#: line and cell magics that change nothing outside the (forked) kernel
_HARMLESS_MAGICS = _words(
    """
    time timeit matplotlib config load_ext reload_ext autoreload aimport precision who whos who_ls pinfo
    pinfo2 pdoc pdef psource pfile psearch env pprint xmode capture prun html HTML javascript js
    markdown md latex svg display lsmagic magic tb colors pylab
    """
)
_MAGICS_WITH_CODE = frozenset({"time", "timeit", "prun", "capture"})
#: a checkpoint/logging callback handed to ``fit`` writes files from C code (h5py, TF summaries)
_WRITING_CALLBACK = re.compile(r"checkpoint|tensorboard|csvlogger|backupandrestore|logger|writer", re.I)


@dataclass(frozen=True)
class ScreenResult:
    safe: bool
    reason: str = ""


def screen(facts: CellFacts) -> ScreenResult:
    """Whether ``safe`` mode may dry-run the cell: no persistence, network, shell or stdin.

    ``reason`` (when not safe) says what the cell does, for the hover: "saves data: df.to_csv()".
    """
    if facts.magic is not None and facts.magic not in _HARMLESS_MAGICS:
        return ScreenResult(False, f"runs the cell magic %%{facts.magic}")
    if not facts.analyzed and facts.magic is None:
        return ScreenResult(False, "the cell could not be analysed")
    if facts.unchecked_from is not None:  # the checks read only the start of a long cell: screen all of it
        facts = analyze_whole(facts.source)
    verdict = _screen_ipython(facts)
    if verdict is not None:
        return verdict
    for call in facts.calls:
        verdict = _screen_call(call)
        if verdict is not None:
            return verdict
    for chain in facts.chains:  # a writer taken by reference: ``save = df.to_csv``, ``map(f.write, ...)``
        if chain.attrs and chain.attrs[-1] in _WRITER_METHODS and not chain.is_store:
            return ScreenResult(False, f"writes outside its files: {chain.base}.{'.'.join(chain.attrs)}")
    for imp in facts.imports:
        module = imp.module
        for name in (module, *(f"{module}.{n}" for n in imp.names)):
            if _in_modules(name, _NETWORK_MODULES):
                return ScreenResult(False, f"talks to the network: imports {name}")
            if _in_modules(name, _SHELL_MODULES):
                return ScreenResult(False, f"runs programs or changes files: imports {name}")
        if any(n in _STDIN_CALLS or n == "getpass" for n in imp.names) or module == "getpass":
            return ScreenResult(False, f"reads from stdin: imports {module}")
    for path, _span in facts.paths:
        if isinstance(path, str) and _URL.match(path):
            return ScreenResult(False, f"talks to the network: reads {path}")
    return ScreenResult(True)


def _in_modules(name: str, modules: frozenset[str]) -> bool:
    return any(name == m or name.startswith(m + ".") for m in modules)


def _screen_call(call: Any) -> ScreenResult | None:
    func: str = call.func
    last = func.rsplit(".", 1)[-1]
    root = func.split(".", 1)[0].split("(", 1)[0]
    shown = f"{func}()"
    if func in _STDIN_CALLS or func.startswith("sys.stdin.") or last == "getpass":
        return ScreenResult(False, f"reads from stdin: {shown}")
    if func in _SHELL_CALLS or _in_modules(func, _SHELL_MODULES):
        return ScreenResult(False, f"runs a program: {shown}")
    if func in _DYNAMIC_CALLS:
        return ScreenResult(False, f"runs code it cannot screen: {shown}")
    if last in _WRITER_METHODS or ".write." in func:
        return ScreenResult(False, f"writes outside its files: {shown}")
    if last in _OS_WRITERS and root in _OS_ROOTS:
        return ScreenResult(False, f"changes files: {shown}")
    if _in_modules(func, _WRITER_MODULES):
        return ScreenResult(False, f"saves or writes files: {shown}")
    if last in _NETWORK_METHODS and (
        last != "connect" or root in ("sqlite3", "psycopg2", "pymysql", "duckdb")
    ):
        return ScreenResult(False, f"downloads or talks to the network: {shown}")
    if _in_modules(func, _NETWORK_MODULES) or func.startswith(("torch.hub.", "tfds.", "hub.")):
        return ScreenResult(False, f"talks to the network: {shown}")
    for arg in call.args:
        if arg.keyword == "download" and arg.text.strip() not in ("False", "None", "0"):
            return ScreenResult(False, f"downloads data: {shown}")
        if arg.keyword == "callbacks" and _WRITING_CALLBACK.search(arg.text):
            return ScreenResult(False, f"may write checkpoints or logs: {shown} with callbacks={arg.text}")
        if arg.is_literal and isinstance(arg.literal, str) and _URL.match(arg.literal):
            return ScreenResult(False, f"talks to the network: {shown} on {arg.literal}")
    return None


def _screen_ipython(facts: CellFacts) -> ScreenResult | None:
    """Shell escapes and magics, from the IPython-transformed source (``!ls`` -> ``get_ipython().system``),
    walked in the tree the analysis already parsed (``CellFacts.tree``): the cell is not parsed again."""
    if "get_ipython()" not in facts.python:
        return None
    tree = facts.tree()
    if tree is None:
        return ScreenResult(False, "uses IPython syntax it cannot screen")
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Call)
            and isinstance(node.func.value.func, ast.Name)
            and node.func.value.func.id == "get_ipython"
        ):
            continue
        kind = node.func.attr
        args = [a.value if isinstance(a, ast.Constant) else None for a in node.args]
        if kind in ("system", "getoutput"):
            command = args[0] if args and isinstance(args[0], str) else "..."
            return ScreenResult(False, f"runs a shell command: !{command}")
        if kind in ("run_line_magic", "run_cell_magic"):
            name = args[0] if args and isinstance(args[0], str) else "?"
            prefix = "%%" if kind == "run_cell_magic" else "%"
            if name not in _HARMLESS_MAGICS:
                return ScreenResult(False, f"runs the magic {prefix}{name}")
            if name in _MAGICS_WITH_CODE and kind == "run_line_magic" and len(args) > 1:
                inner = args[1]
                if not isinstance(inner, str):
                    return ScreenResult(False, f"runs the magic {prefix}{name} on code it cannot screen")
                verdict = screen(analyze(inner))
                if not verdict.safe:
                    return verdict
            continue
        if kind in ("user_ns", "kernel", "events"):
            continue
        return ScreenResult(False, f"calls get_ipython().{kind}()")
    return None
