#!/usr/bin/env bash
# Adds the Node parts to the npm package in build/pkg (made first by bindings-wasm/build.sh): the
# native module, a release build of the crate deadletter-node (plain cargo: napi-rs's CLI is not
# needed) whose cdylib is renamed to the name Node's loader in node/backend.js asks for
# (deadletter.linux-x64-gnu.node) and stripped, and node/index.js, node/backend.js. The module
# links SQLite in (deadletter-sqlite's `bundled`) and needs only glibc; N-API modules load in
# every Node >= 20 without a rebuild. Prints the module's size.
# Usage: bindings-node/build.sh   (from anywhere)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/build/pkg"
cd "$root"
if [ ! -f "$out/package.json" ]; then
  echo "bindings-node/build.sh: build/pkg is missing: run bindings-wasm/build.sh (make js) first" >&2
  exit 1
fi
# SQLite syncs with fdatasync(2), as the system SQLite of Debian (and of the Python package's
# development builds) does, rather than fsync(2), the fallback of the amalgamation that rusqlite's
# `bundled` compiles: the same durability (the data reaches the disk before a commit returns),
# without the inode's timestamps.
LIBSQLITE3_FLAGS="-DHAVE_FDATASYNC=1" cargo build --release -p deadletter-node
mkdir -p "$out/node"
module="$out/node/deadletter.linux-x64-gnu.node"
cp target/release/libdeadletter_node.so "$module"
strip --strip-unneeded "$module"
cp bindings-node/js/index.js bindings-node/js/backend.js "$out/node/"
printf 'built %s: %d bytes\n' "${module#"$root"/}" "$(wc -c <"$module")"
