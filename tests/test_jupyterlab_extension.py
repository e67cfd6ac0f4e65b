"""The prebuilt JupyterLab extension that ships in the wheel is complete and matches its sources."""

from __future__ import annotations

import json
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BUILT = REPO / "crane_lsp" / "labextension"
SOURCE = REPO / "jupyterlab"


def test_every_file_the_bundle_loads_is_committed() -> None:
    meta = json.loads((BUILT / "package.json").read_text())
    build = meta["jupyterlab"]["_build"]
    assert (BUILT / build["load"]).is_file()
    entry = (BUILT / build["load"]).read_text()
    chunks = sorted(p.name for p in (BUILT / "static").glob("*.js") if p.name[0].isdigit())
    assert chunks, "no code chunks next to the remote entry"
    for chunk in chunks:  # webpack names chunks "<id>.<hash>.js" and the entry refers to each hash
        assert chunk.split(".")[1] in entry, f"{chunk} is not referenced by {build['load']}"


def test_bundle_was_built_from_these_sources() -> None:
    meta = json.loads((BUILT / "package.json").read_text())
    source = json.loads((SOURCE / "package.json").read_text())
    assert meta["name"] == source["name"] == "crane-lsp"
    assert meta["version"] == source["version"]
    schema = json.loads((SOURCE / "schema" / "plugin.json").read_text())
    assert json.loads((BUILT / "schemas" / "crane-lsp" / "plugin.json").read_text()) == schema
    version = re.search(r'^version = "([^"]+)"', (REPO / "pyproject.toml").read_text(), re.M)
    assert version and version.group(1) == source["version"]


def test_the_wheel_places_it_where_jupyterlab_looks() -> None:
    text = (REPO / "pyproject.toml").read_text()
    static = '"share/jupyter/labextensions/crane-lsp/static" = ["crane_lsp/labextension/static/*"]'
    assert static in text.splitlines()
    section = text.split("[project.entry-points.jupyter_lsp_spec_v1]", 1)[1].split("[", 1)[0]
    assert 'crane-lsp = "crane_lsp.server.jupyter_spec:spec"' in section
