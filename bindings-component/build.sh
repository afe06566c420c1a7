#!/usr/bin/env bash
# Builds deadletter's WebAssembly component into build/component (git-ignored):
# - the core module: crate deadletter-component for wasm32-unknown-unknown (profile
#   `wasm-release`: the release profile optimized for size), shrunk by binaryen's `wasm-opt -Oz`
#   (the root's npm package `binaryen`), which keeps the custom section wit-bindgen embedded (the
#   component's types);
# - the component: `jco new` (jco's bundled wasm-tools, `wasm-tools component new`) wraps the
#   module; no WASI adapter is involved, and the build fails if the component imports anything;
# - deadletter-X.Y.Z.component.wasm and deadletter-X.Y.Z.wit (wit/deadletter.wit), X.Y.Z the
#   Cargo workspace's version, which must be the WIT package's;
# - the component transpiled by `jco transpile` into build/component/js (JavaScript + core wasm,
#   for the Node host of the tests).
# Prints the component's size, raw and gzipped.
# Usage: bindings-component/build.sh   (from anywhere; needs scripts/setup.sh component)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/build/component"
jco="$root/bindings-component/node_modules/.bin/jco"
cd "$root"
pkgid=$(cargo pkgid -p deadletter-component)   # path+file:///...#deadletter-component@X.Y.Z
version="${pkgid##*@}"
if ! grep -q "^package deadletter:queue@$version;" bindings-component/wit/deadletter.wit; then
  echo "bindings-component/wit/deadletter.wit: the package must be deadletter:queue@$version" >&2
  exit 1
fi
cargo build --profile wasm-release --target wasm32-unknown-unknown -p deadletter-component
rm -rf "$out"
mkdir -p "$out"
module="$out/deadletter_component.core.wasm"
# The WebAssembly features rustc's wasm32-unknown-unknown target emits by default (Rust >= 1.87).
npx --no-install wasm-opt -Oz --strip-producers \
  --enable-bulk-memory --enable-mutable-globals --enable-multivalue \
  --enable-nontrapping-float-to-int --enable-reference-types --enable-sign-ext \
  target/wasm32-unknown-unknown/wasm-release/deadletter_component.wasm -o "$module"
component="$out/deadletter-$version.component.wasm"
"$jco" new "$module" -o "$component"
rm "$module"
cp bindings-component/wit/deadletter.wit "$out/deadletter-$version.wit"
# What the component imports: nothing (its WIT world, as `jco wit` prints it, has no import).
if "$jco" wit "$component" | grep -q '^ *import '; then
  echo "$component imports something:" >&2
  "$jco" wit "$component" | grep '^ *import ' >&2
  exit 1
fi
"$jco" transpile "$component" --name deadletter --out-dir "$out/js" --quiet
echo '{ "type": "module" }' >"$out/js/package.json"
raw=$(wc -c <"$component")
gz=$(gzip -9 -c "$component" | wc -c)
awk -v file="${component#"$root"/}" -v raw="$raw" -v gz="$gz" 'BEGIN {
  printf "built %s: %d bytes (%.1f kB), %d bytes gzipped (%.1f kB), no imports\n", file, raw, raw / 1000, gz, gz / 1000
}'
