"""crane-lsp: predict notebook cell crashes before they run, from the live kernel state and the code."""

__version__ = "0.1.0"
