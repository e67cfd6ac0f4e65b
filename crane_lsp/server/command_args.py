"""Typed arguments of the server's ``workspace/executeCommand`` commands (and ``crane/attachKernel``).

Editors send either positional values (``[uri, cellKey, predictionId]``, as the code actions do) or
one object with named fields (``{"uri", "line", "cell", "predictionId"}``, as JupyterLab and the VS
Code extension do). Each model names both forms: ``positional`` is the order of the first; every
field, ``line`` included, may come in the second. Unknown fields are ignored (newer editors).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from crane_lsp.server.config import plain

__all__ = ["AttachArgs", "BadArguments", "CellArgs", "parse", "raw"]


class BadArguments(ValueError):
    """The arguments do not fit the command: the message names the fields."""


class _Args(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="ignore", frozen=True)
    positional: ClassVar[tuple[str, ...]] = ()


class CellArgs(_Args):
    """A cell: by its key (``cell``), else by a document URI and a line in it (``# %%`` scripts).
    ``crane.ignoreFinding``'s third value, the prediction id, is informative only: not read."""

    positional: ClassVar[tuple[str, ...]] = ("uri", "cell")
    uri: str = ""
    line: int = Field(default=0, ge=0)
    cell: str | None = None
    #: the cell's text in the editor (``crane.cellVerdict``): a verdict for any other text is stale
    text: str | None = None


class AttachArgs(_Args):
    """``crane.attachKernel``: the notebook and its kernel's connection file (or JupyterLab's id), or
    its URL on a Jupyter server (``kernelUrl``, or a URL as ``connectionFile``); never a token."""

    positional: ClassVar[tuple[str, ...]] = ("notebookUri", "connectionFile")
    notebook_uri: str = Field(default="", alias="notebookUri")
    connection_file: str = Field(default="", alias="connectionFile")
    kernel_id: str | None = Field(default=None, alias="kernelId")
    kernel_url: str | None = Field(default=None, alias="kernelUrl")
    #: the editor relays its own kernel connection (VS Code, kernel on a remote server): no file, no URL
    relay: bool = False


A = TypeVar("A", bound=_Args)


def raw(arguments: Sequence[Any], positional: Sequence[str]) -> dict[str, Any]:
    """The arguments as one object with named fields, from either form."""
    values = [plain(a) for a in arguments]
    if len(values) == 1 and isinstance(values[0], dict):
        return values[0]
    return {name: value for name, value in zip(positional, values, strict=False) if value is not None}


def parse(model: type[A], arguments: Sequence[Any] | dict[str, Any]) -> A:
    """``model`` from the command's arguments; ``BadArguments`` saying which field is wrong."""
    data = arguments if isinstance(arguments, dict) else raw(arguments, model.positional)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        wrong = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}" for e in exc.errors())
        raise BadArguments(wrong) from exc
