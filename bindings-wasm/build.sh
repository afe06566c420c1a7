#!/usr/bin/env bash
# Builds the npm package `deadletter` into build/pkg (git-ignored): the wasm (profile
# `wasm-release`: the release profile optimized for size), its wasm-bindgen glue (--target web),
# the module shrunk by binaryen's `wasm-opt -Oz --converge` (npm package `binaryen`; --converge
# repeats the passes while they still shrink it, about 200 bytes gzipped; it also drops the name
# section; `-ocimfs 30`, see below), and the hand-written JavaScript (the entry, the backend, the IndexedDB store in
# store/), types and package.json, whose version is set here to the Cargo workspace's (the
# Python package's too). Prints the .wasm's size (bindings-wasm/size.mjs).
# Usage: bindings-wasm/build.sh   (from anywhere; needs scripts/setup.sh wasm)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/build/pkg"
cd "$root"
cargo build --profile wasm-release --target wasm32-unknown-unknown -p deadletter-wasm
rm -rf "$out"
wasm-bindgen --target web --weak-refs --no-typescript --out-dir "$out" \
  target/wasm32-unknown-unknown/wasm-release/deadletter_wasm.wasm
# The WebAssembly features rustc's wasm32-unknown-unknown target emits by default (Rust >= 1.87),
# which wasm-opt must accept in its input and may use in its output.
# `-ocimfs 30` (--one-caller-inline-max-function-size): a function called from one place is
# inlined only when it is at most 30 bytes (-Oz inlines every one), so that the core's checks and
# steps stay functions of their own instead of being copied into the wasm-bindgen shim of the
# export that calls them: the module grows (about 4 kB) but gzips smaller (3.7 kB less at
# issue 22, 63 213 -> 59 493 B; 20 to 40 all gave 59.3 to 59.9 kB, unbounded 63.2 kB).
# --strip-target-features drops the features section, which nothing reads at run time.
npx --no-install wasm-opt -Oz --converge -ocimfs 30 --strip-producers --strip-target-features \
  --enable-bulk-memory --enable-mutable-globals --enable-multivalue \
  --enable-nontrapping-float-to-int --enable-reference-types --enable-sign-ext \
  "$out/deadletter_wasm_bg.wasm" -o "$out/deadletter_wasm_bg.wasm"
cp bindings-wasm/js/index.js bindings-wasm/js/errors.js bindings-wasm/js/worker.js \
  bindings-wasm/js/core.js bindings-wasm/js/backend.js bindings-wasm/js/platform.js bindings-wasm/js/api.js \
  bindings-wasm/js/outbox.js bindings-wasm/js/service-worker.js bindings-wasm/js/index.d.ts \
  bindings-wasm/js/service-worker.d.ts \
  bindings-wasm/js/conformance.mjs bindings-wasm/README.md LICENSE "$out/"
cp -r bindings-wasm/js/store "$out/store"
# store/record.js ships once, where wasm-bindgen put it for its glue (snippets/).
rm "$out/store/record.js"
pkgid=$(cargo pkgid -p deadletter-wasm)   # path+file:///...#deadletter-wasm@X.Y.Z
VERSION="${pkgid##*@}" node -e '
  const fs = require("node:fs");
  const { name, ...rest } = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
  const pkg = { name, version: process.env.VERSION, ...rest };
  fs.writeFileSync(process.argv[2], JSON.stringify(pkg, null, 2) + "\n");
' bindings-wasm/package.json "$out/package.json"
echo -n "built "
node bindings-wasm/size.mjs "$out/deadletter_wasm_bg.wasm"
