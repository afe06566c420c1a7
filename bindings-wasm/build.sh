#!/usr/bin/env bash
# Builds the npm package `deadletter` into build/pkg (git-ignored): the release wasm, its
# wasm-bindgen glue (--target web), and the hand-written entry, types and package.json, whose
# version is set here to the Cargo workspace's (the Python package's too).
# Usage: bindings-wasm/build.sh   (from anywhere; needs scripts/setup.sh wasm)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/build/pkg"
cd "$root"
cargo build --release --target wasm32-unknown-unknown -p deadletter-wasm
rm -rf "$out"
wasm-bindgen --target web --weak-refs --no-typescript --out-dir "$out" \
  target/wasm32-unknown-unknown/release/deadletter_wasm.wasm
cp bindings-wasm/js/index.js bindings-wasm/js/errors.js bindings-wasm/js/worker.js \
  bindings-wasm/js/index.d.ts \
  bindings-wasm/js/conformance.mjs bindings-wasm/README.md LICENSE "$out/"
pkgid=$(cargo pkgid -p deadletter-wasm)   # path+file:///...#deadletter-wasm@X.Y.Z
VERSION="${pkgid##*@}" node -e '
  const fs = require("node:fs");
  const { name, ...rest } = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
  const pkg = { name, version: process.env.VERSION, ...rest };
  fs.writeFileSync(process.argv[2], JSON.stringify(pkg, null, 2) + "\n");
' bindings-wasm/package.json "$out/package.json"
raw=$(wc -c <"$out/deadletter_wasm_bg.wasm")
gz=$(gzip -9 -c "$out/deadletter_wasm_bg.wasm" | wc -c)
echo "built $out: deadletter_wasm_bg.wasm $raw bytes, $gz gzipped"
