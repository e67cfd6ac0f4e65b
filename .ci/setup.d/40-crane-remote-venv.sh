#!/usr/bin/env bash
# The Jupyter Server of tests/test_remote_kernel.py (issue 25) runs as the user crane-remote from a venv
# of its own, built from Debian's python3 (any user may run it) with ipykernel, jupyter_server, pandas
# and numpy. tests.remote_server_util builds it (and creates the user) when missing; doing it here keeps
# the build out of the first test's time limit. It runs as a module (-m) because it imports tests.ports.
# Idempotent: a ready venv is left as it is.
set -euo pipefail
/usr/bin/python3 -m tests.remote_server_util
