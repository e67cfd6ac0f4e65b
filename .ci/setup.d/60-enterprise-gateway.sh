#!/usr/bin/env bash
# Jupyter Enterprise Gateway 3.3.0 for tests/test_gateway_jupyterlab.py (issue 25): a JupyterLab in
# gateway mode whose kernels run in a real Enterprise Gateway. EG 3.3.0 still imports
# notebook.notebookapp, so it needs notebook<7 and gets a virtual environment of its own, from
# Debian's python3 (any user may run it), with ipykernel and pandas for the kernels it starts.
# Idempotent: a venv that already imports the right version is left as it is.
set -euo pipefail
EG_VERSION=3.3.0
VENV=/opt/crane-eg-venv

ready() {
  "$VENV/bin/python" - <<PY 2>/dev/null
import importlib.metadata as m, enterprise_gateway, ipykernel, pandas, notebook.notebookapp
assert m.version("jupyter_enterprise_gateway") == "$EG_VERSION"
PY
}
if [ -x "$VENV/bin/python" ] && ready; then
  exit 0
fi
rm -rf "$VENV"
/usr/bin/python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
"$VENV/bin/python" -m pip install -q "jupyter_enterprise_gateway==$EG_VERSION" "notebook<7" ipykernel pandas
# the kernel EG starts is this venv's own python3 (not whatever python3 is first on PATH)
"$VENV/bin/python" -m ipykernel install --prefix "$VENV" --name python3 --display-name "Python 3 (EG)"
ready
"$VENV/bin/jupyter-enterprisegateway" --version
