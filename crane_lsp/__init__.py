"""crane-lsp: predict notebook cell crashes before they run, from the live kernel state and the code."""

__version__ = "0.1.0"


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """The prebuilt JupyterLab extension, for ``jupyter labextension develop .`` (editable installs)."""
    return [{"src": "labextension", "dest": "crane-lsp"}]
