#!/usr/bin/env bash
# Installs everything `make demo` and `make test` need, idempotently: each step runs only when its
# result is missing. Usage:
# scripts/setup.sh [python|wasm|browser|postgres|bench|bench-node|component|all]
set -euo pipefail
cd "$(dirname "$0")/.."
what="${1:-all}"
WASM_BINDGEN_VERSION=0.2.129   # must equal the wasm-bindgen crate pinned in Cargo.toml

# Source builds link the system SQLite (the interpreter's `sqlite3` module links the same library);
# the install tests read a live database with the sqlite3 command-line tool.
sqlite_env() {
  local pkg missing=()
  for pkg in libsqlite3-dev pkg-config sqlite3; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
}

python_env() {
  sqlite_env
  [ -x .venv/bin/python ] || python3 -m venv .venv
  # Exact pins that are already satisfied make this a quick, offline no-op.
  .venv/bin/pip install --quiet --disable-pip-version-check -r bindings-python/requirements-dev.txt
}

# The anchors benchmark's own venv: the queues it measures deadletter against, pinned. deadletter
# itself comes from the development build (`make python`) through PYTHONPATH.
bench_env() {
  [ -x .venv-bench/bin/python ] || python3 -m venv .venv-bench
  .venv-bench/bin/pip install --quiet --disable-pip-version-check -r bindings-python/benches/requirements.txt
}

# The references of the Node benchmark (bindings-node/benches/package.json, pinned, in their own
# node_modules): better-sqlite3, compiled against the installed Node's headers (its prebuilt
# binaries would be downloaded from GitHub), BullMQ, and Debian's redis-server for BullMQ.
bench_node_env() {
  if ! command -v redis-server >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends redis-server
  fi
  [ -d bindings-node/benches/node_modules/better-sqlite3/build/Release ] &&
    [ -d bindings-node/benches/node_modules/bullmq ] ||
    (cd bindings-node/benches &&
      npm_config_nodedir="$(dirname "$(dirname "$(command -v node)")")" \
        npm ci --no-audit --no-fund --loglevel=error)
}

npm_env() {
  [ -d node_modules/@octokit/webhooks-examples ] && [ -d node_modules/fake-indexeddb ] &&
    [ -d node_modules/playwright-core ] && [ -d node_modules/typescript ] &&
    [ -d node_modules/esbuild ] && [ -d node_modules/binaryen ] ||
    npm ci --no-audit --no-fund --loglevel=error
}

wasm_env() {
  rustup target list --installed | grep -qx wasm32-unknown-unknown ||
    rustup target add wasm32-unknown-unknown
  if ! wasm-bindgen --version 2>/dev/null | grep -q " $WASM_BINDGEN_VERSION\$"; then
    cargo install wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION" --locked
  fi
}

# The WebAssembly component's tools (make component, make test-component): the wasm32 target,
# binaryen's wasm-opt (the root's npm packages), jco (bindings-component/package.json, in its own
# node_modules: it makes the component and transpiles it for Node) and the Python host's venv
# .venv-component (wasmtime's prebuilt wheel and pytest, bindings-component/requirements.txt).
component_env() {
  npm_env
  rustup target list --installed | grep -qx wasm32-unknown-unknown ||
    rustup target add wasm32-unknown-unknown
  [ -x bindings-component/node_modules/.bin/jco ] ||
    (cd bindings-component && npm ci --no-audit --no-fund --loglevel=error)
  [ -x .venv-component/bin/python ] || python3 -m venv .venv-component
  .venv-component/bin/pip install --quiet --disable-pip-version-check \
    -r bindings-component/requirements.txt
}

browser_env() {
  if ! command -v chromium >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium
  fi
}

# PostgreSQL 15+ server binaries for scripts/pg.sh (Debian's package; its own cluster is not used).
postgres_env() {
  if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql
  fi
}

case "$what" in
  python) python_env; npm_env ;;
  wasm) npm_env; wasm_env ;;
  browser) npm_env; browser_env ;;
  postgres) postgres_env ;;
  bench) bench_env ;;
  bench-node) bench_node_env ;;
  component) component_env ;;
  all) python_env; npm_env; wasm_env; browser_env; postgres_env; component_env ;;
  *) echo "usage: $0 [python|wasm|browser|postgres|bench|bench-node|component|all]" >&2; exit 2 ;;
esac
