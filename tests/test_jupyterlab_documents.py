"""jupyter-lsp's virtual notebook document split back into cells, and its path mapped back."""

from __future__ import annotations

import json
from pathlib import Path

from crane_lsp.server.jupyter_documents import (
    is_virtual_notebook,
    notebook_path,
    split_virtual,
    unmagic,
    view_for_text,
    virtual_view,
)
from crane_lsp.server.jupyter_sessions import with_connection_file


def joined(cells: list[str]) -> str:
    """Exactly what @jupyterlab/lsp's VirtualDocument.value builds from code cells."""
    return "\n\n".join(c + "\n" for c in cells)


def test_cells_and_their_first_lines_round_trip() -> None:
    cells = ["import pandas as pd\ndf = pd.DataFrame({'a': [1]})", "df['b']", "", "x = 1\ny = 2\nz = 3"]
    blocks = split_virtual(joined(cells))
    assert [b.text for b in blocks] == cells
    text_lines = joined(cells).split("\n")
    for block in blocks:
        shown = text_lines[block.first_line : block.first_line + block.text.count("\n") + 1]
        assert shown == block.text.split("\n")


def test_a_cell_with_two_blank_lines_is_kept_whole_when_the_saved_notebook_shows_it(tmp_path: Path) -> None:
    two_defs = "def f():\n    return 1\n\n\ndef g():\n    return 2"
    cells = ["a = 1", two_defs, "f() + g()"]
    assert len(split_virtual(joined(cells))) == 4  # without a hint the blank lines look like a boundary
    hinted = split_virtual(joined(cells), [(c, "code") for c in cells])
    assert [b.text for b in hinted] == cells
    assert hinted[2].first_line == joined(cells).split("\n").index("f() + g()")


def test_line_magics_come_back_as_typed() -> None:
    assert unmagic('get_ipython().run_line_magic("matplotlib", "inline")') == "%matplotlib inline"
    assert unmagic('    get_ipython().run_line_magic("time", "x = \\"a\\"")') == '    %time x = "a"'
    assert unmagic('get_ipython().run_line_magic("who", "")') == "%who"
    assert unmagic('get_ipython().system("ls -l")') == "!ls -l"
    assert unmagic("print('get_ipython()')") == "print('get_ipython()')"


def test_virtual_documents_path_maps_to_the_notebook() -> None:
    virtual = Path("/srv/nbs/.virtual_documents/sub/Sales.ipynb")
    assert notebook_path(virtual) == Path("/srv/nbs/sub/Sales.ipynb")
    assert notebook_path(Path("/srv/nbs/sub/Sales.ipynb")) == Path("/srv/nbs/sub/Sales.ipynb")


def test_which_documents_are_virtual_notebooks() -> None:
    assert is_virtual_notebook("file:///srv/.virtual_documents/a.ipynb", "python")
    assert is_virtual_notebook("file:///srv/a%20b.ipynb", "python")
    assert not is_virtual_notebook("file:///srv/a.ipynb", "json")
    assert not is_virtual_notebook("vscode-notebook-cell:/srv/a.ipynb#W0sZmlsZQ", "python")
    assert not is_virtual_notebook("file:///srv/a.py", "python")


def test_markdown_cells_are_recognised_from_the_saved_notebook(tmp_path: Path) -> None:
    nb = tmp_path / "n.ipynb"
    nb.write_text(
        json.dumps(
            {
                "cells": [
                    {"cell_type": "markdown", "source": ["# Title"], "metadata": {}},
                    {"cell_type": "code", "source": "x = 1", "metadata": {}, "outputs": []},
                ],
                "metadata": {},
                "nbformat": 4,
                "nbformat_minor": 5,
            }
        )
    )
    virtual = tmp_path / ".virtual_documents" / "n.ipynb"
    view = virtual_view(virtual.as_uri(), joined(["# Title", "x = 1"]))
    assert [c.kind for c in view.cells] == ["markdown", "code"]
    assert view.percent and view.cells[1].first_line == 3 and view.cells[1].uri == virtual.as_uri()


def test_plain_scripts_still_use_percent_cells() -> None:
    view = view_for_text("file:///w/s.py", "# %%\na = 1\n# %%\nb = 2\n")
    assert [c.text for c in view.cells] == ["a = 1", "b = 2"] and view.cells[1].first_line == 3


def test_attach_by_kernel_id_resolves_the_connection_file(tmp_path: Path) -> None:
    cf = tmp_path / "kernel-0b5c-11.json"
    cf.write_text("{}")
    args = {"notebookUri": "file:///x.ipynb", "kernelId": "0b5c-11"}
    assert with_connection_file(args, [tmp_path])["connectionFile"] == str(cf)
    bare = {"notebookUri": "file:///x.ipynb", "connectionFile": "kernel-0b5c-11.json"}
    assert with_connection_file(bare, [tmp_path])["connectionFile"] == str(cf)
    escape = {"kernelId": "../../etc/passwd"}
    assert with_connection_file(escape, [tmp_path]) == escape
    explicit = {"connectionFile": "/abs/kernel-1.json"}
    assert with_connection_file(explicit, [tmp_path]) == explicit
