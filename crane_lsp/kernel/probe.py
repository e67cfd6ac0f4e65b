"""Kernel-side probe: STANDARD LIBRARY ONLY, sent to the kernel as source text.

Entry points (called through ``probe_install.call_expression``) take one JSON string and return an
object whose ``_repr_json_`` gives the answer as ``application/json``:

    snapshot(query_json) -> JSON matching ``crane_lsp.runtime.Snapshot``
"""

import json as _json


class _JSONResult:
    def __init__(self, data):
        self._data = data

    def _repr_json_(self):
        return self._data

    def __repr__(self):
        return _json.dumps(self._data)


def snapshot(query_json):
    """Placeholder until the probe lands: answers an empty, valid snapshot."""
    return _JSONResult({"ok": True, "variables": {}, "errors": ["probe not implemented"]})
