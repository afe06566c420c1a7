# The two commands of the README: `make demo` and `make test`. Both install what they need first
# (scripts/setup.sh is idempotent).
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
# The interpreter's shared library, for the one set of Rust test binaries that links pyo3
# (deadletter-py's own); the stores and the core need no Python.
PYLIB := $(shell python3 -c 'import sysconfig; print(sysconfig.get_config_var("LIBDIR"))')
export PYO3_PYTHON := $(CURDIR)/$(PY)

.PHONY: demo demo-http test setup python test-rust test-postgres test-python lint js test-js test-browser browser-demo node test-node bench bench-js bench-node bench-python bench-postgres bench-dlq bench-produce bench-http bench-metrics bench-anchors bench-scaling dist test-dist component test-component

setup:
	scripts/setup.sh all

## Builds the Python extension into .venv (maturin gets its own target dir so pyo3 is not rebuilt).
python:
	scripts/setup.sh python
	@# A module of a version-specific build (before the abi3 one) would shadow the abi3 module.
	rm -f bindings-python/python/deadletter/_deadletter.cpython-*.so
	VIRTUAL_ENV=$(CURDIR)/$(VENV) CARGO_TARGET_DIR=$(CURDIR)/target/maturin \
		$(VENV)/bin/maturin develop --release --quiet -m bindings-python/Cargo.toml

demo: python
	$(PY) examples/webhook_relay.py

## The same demo through the HTTP API (deadletter.http under uvicorn, httpx workers).
demo-http: python
	$(PY) examples/webhook_relay.py --http

test: lint test-rust test-postgres test-python test-js test-browser test-node test-component test-dist

# clippy builds the pyo3 crate, which needs the venv's interpreter: install everything first.
lint: setup python
	cargo fmt --all --check
	$(PY) scripts/rust_version.py
	cargo clippy --workspace --all-targets --all-features -- -D warnings
	cargo clippy --target wasm32-unknown-unknown -p deadletter-wasm --all-targets -- -D warnings
	cargo clippy --target wasm32-unknown-unknown -p deadletter-component --all-targets -- -D warnings
	RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet
	RUSTDOCFLAGS="-D warnings" cargo doc --target wasm32-unknown-unknown -p deadletter-wasm --no-deps --quiet

## The core, deadletter-sqlite and the binding's Rust tests: every shared conformance case as its
## own test on the memory store and on SQLite (in memory and on files); the SQLite store's plans,
## upgrades, group commit and fork hooks. All features: SQLite is the bundled library here (a
## plain `cargo test -p deadletter-sqlite` uses the system's). The PostgreSQL store's tests need
## a server: test-postgres runs them.
test-rust: python
	cargo test --workspace --all-features --exclude deadletter-postgres --exclude deadletter-py
	LD_LIBRARY_PATH=$(PYLIB):$$LD_LIBRARY_PATH cargo test -p deadletter-py --all-features

## The PostgreSQL store (stores/postgres) on a throwaway cluster that scripts/pg.sh starts (initdb +
## pg_ctl in a temporary folder, as the postgres user when root) and always stops: every conformance
## case as its own test (a fresh schema each), claim's plans on 1 000 000 rows, 8 workers, a server
## restart; then the Python package on it (the tests marked `postgres`: every conformance case,
## 8 processes, a fork, a restart under a call, the CLI and `deadletter serve` on a URL). To see
## the plans:
## scripts/pg.sh run cargo test -p deadletter-postgres --test plans -- --nocapture
test-postgres: python
	scripts/setup.sh postgres
	scripts/pg.sh run bash -c \
		'cargo test -p deadletter-postgres && $(PY) -m pytest -q -m postgres bindings-python/tests'

# The dashboard test drives Chromium (scripts/setup.sh browser) with playwright-core (npm ci).
test-python: python
	scripts/setup.sh browser
	$(PY) -m pytest -q bindings-python/tests examples

## The npm package `deadletter` in build/pkg: release wasm + wasm-bindgen glue + js/, d.ts, package.json.
js:
	scripts/setup.sh wasm
	bindings-wasm/build.sh

## The JS package in Node (fake-indexeddb): the Rust wasm tests (JavaScript values and errors at
## the binding's edge), every shared conformance case, the IndexedDB store's own cases (its
## transaction discipline) and the API tests through the package, and `tsc --noEmit` on the TS example.
test-js: js
	cargo test --target wasm32-unknown-unknown -p deadletter-wasm
	node --require fake-indexeddb/auto --test bindings-wasm/js/test/
	npx --no-install tsc -p bindings-wasm/examples

## Browser side of the npm package (bindings-wasm/tests/browser/): headless Debian Chromium driven by
## playwright-core, pages served by examples/browser/server.mjs on 127.0.0.1: every conformance
## case, the IndexedDB store's own cases on the real IndexedDB, workers, tabs, offline, the service
## worker's sync, the demo.
test-browser: js
	scripts/setup.sh browser
	node bindings-wasm/tests/browser/run.mjs

## The npm package's Node parts, added to build/pkg: the native module (bindings-node: a release
## build of the crate deadletter-node over stores/sqlite, renamed deadletter.linux-x64-gnu.node)
## and node/index.js, node/backend.js (the "node" export of the package).
node: js
	bindings-node/build.sh

## The npm package in Node on SQLite files (bindings-node/tests/): every shared conformance case
## (the eighth place), opening and bad input, the clock under the write lock, close(), onDead
## across Databases and worker threads, the worker loop, restarts after SIGKILL, the event loop
## kept turning while acks commit, a platform without the module; and 4 Node + 2 Python
## processes draining 10 000 messages from one file through SIGKILLs (DEADLETTER_STORM=N for
## another size). The crate's own unit tests run in test-rust.
test-node: python node
	node --test bindings-node/tests/

## deadletter's WebAssembly component (bindings-component/, WIT world deadletter:queue), in
## build/component: the crate for wasm32-unknown-unknown made a component by jco (no WASI: it
## imports nothing), deadletter-X.Y.Z.component.wasm and its deadletter-X.Y.Z.wit, and its
## JavaScript transpilation for the Node host of the tests. Prints the component's size.
component:
	scripts/setup.sh component
	bindings-component/build.sh

## The shared conformance cases through the component from two hosts, each with an in-memory store
## written in its language that selects and persists and asks the component for every decision
## (bindings-component/hosts/): Python with wasmtime's prebuilt wheel (.venv-component), and Node
## with jco's transpilation; and the crate's version check (in test-rust).
test-component: component
	.venv-component/bin/python -m pytest -q bindings-component/tests
	node --test bindings-component/tests/

## Serves the browser demo (examples/browser/) and prints its URL; Ctrl-C stops it.
browser-demo: js
	node examples/browser/server.mjs

## Benchmark, not a test: the .wasm's size and cold start, deadletter cycles against plain IndexedDB
## transactions in Chromium, a claim with 1 000 delayed messages ahead. BEFORE=DIR (a package built
## before a change, e.g. by `make js` on main, copied away) prints its figures in the same run.
bench-js: js
	scripts/setup.sh browser
	node bindings-wasm/tests/browser/bench.mjs 60 $(if $(BEFORE),--before $(BEFORE))

## Every benchmark of the repository in one go, one after the other (each prints its figures; none
## asserts anything). A new benchmark target joins by being added to BENCHES.
BENCHES := bench-python bench-produce bench-dlq bench-anchors bench-scaling bench-http bench-metrics \
	bench-postgres bench-js bench-node
bench:
	@for target in $(BENCHES); do echo "== make $$target"; $(MAKE) --no-print-directory $$target || exit 1; done

## Benchmark, not a test: the npm package in Node on SQLite, end to end (enqueue+claim+succeed)
## messages/s one at a time and through q.process({ concurrency: 8 }), at durability full and
## normal, beside a hand-written better-sqlite3 queue at the same durability (on the JavaScript
## thread, and on a worker thread a message a step), the same loop from Python on the same store,
## and BullMQ on a local redis-server (appendfsync always, and everysec): min/median/max of
## interleaved rounds, and the ratios. Its npm packages are pinned in
## bindings-node/benches/package.json (own node_modules).
bench-node: node
	scripts/setup.sh bench-node
	node bindings-node/benches/throughput.mjs

## Benchmark, not a test: claim+succeed cost on SQLite as finished and delayed messages pile up;
## claim with 1 000 group heads in backoff and 10 000 messages behind them against a queue without
## groups, and claim+succeed of grouped messages (issue 21).
bench-python: python
	$(PY) bindings-python/benches/claim_cost.py
	$(PY) bindings-python/benches/group_claim.py

## Benchmark, not a test: deadletter against localqueue, litequeue and persist-queue (pinned in
## bindings-python/benches/requirements.txt, in their own venv .venv-bench) and a raw SQL queue, at
## equal and default durability: messages/s, claim cost as the backlog grows, WAL bytes per message.
bench-anchors: python
	scripts/setup.sh bench
	PYTHONPATH=$(CURDIR)/bindings-python/python .venv-bench/bin/python bindings-python/benches/anchors.py

## Benchmark, not a test: 1 against 4 threads sharing a Database (group commit), 1 against 4
## processes on one file, and each process's share.
bench-scaling: python
	$(PY) bindings-python/benches/scaling.py

## Benchmark, not a test: claim+succeed messages/s with 1, 4 and 16 workers on PostgreSQL (durable
## settings) beside SQLite, in one run: Rust threads over each store, then Python processes over the
## package; the cost of one claim with 10 000 delayed messages ahead against none (issue 10), and
## with 1 000 group heads in backoff and 10 000 messages behind them (issue 21); then claim's query
## plans on 1 000 000 messages.
bench-postgres: python
	scripts/setup.sh postgres
	scripts/pg.sh run --durable bash -c \
		'cargo bench -p deadletter-postgres --bench claim_throughput && \
		$(PY) bindings-python/benches/postgres_throughput.py && \
		cargo bench -p deadletter-postgres --bench claim_delayed && \
		cargo test -q -p deadletter-postgres --test plans -- --nocapture'

## Benchmark, not a test: stats, claim and replay_all on a SQLite file of 1,000,000 messages, and how
## long replay_all keeps another process's writes waiting.
bench-dlq: python
	$(PY) bindings-python/benches/dlq.py

## Benchmark, not a test: messages/s of single enqueues against enqueue_many, single claims against
## claim_many, on a SQLite file.
bench-produce: python
	$(PY) bindings-python/benches/produce.py

## Benchmark, not a test: requests/s of `deadletter serve` (1 and 4 workers) against the Python API.
bench-http: python
	$(PY) bindings-python/benches/http_throughput.py

## Benchmark, not a test: the cost of a Prometheus scrape (GET /metrics) on a SQLite file of
## 1,000,000 messages, in one queue and in 1,000, against an empty file.
bench-metrics: python
	$(PY) bindings-python/benches/metrics_scrape.py

## Release artifacts in dist/ (what `pip install deadletter` and `npm install deadletter` get):
## the abi3 wheel, with its own SQLite, checked manylinux-compliant by maturin (own target dir:
## other features than the dev build); the sdist (builds against the system libsqlite3); the npm
## tarball of build/pkg, with the Node module for linux-x64-gnu; the WebAssembly component
## deadletter-X.Y.Z.component.wasm and its WIT, deadletter-X.Y.Z.wit (make component). Name and
## version: the Cargo workspace's. The wheel's SQLite is compiled as the Node module's
## (bindings-node/build.sh): syncing with fdatasync(2), as Debian's does.
dist: node component
	scripts/setup.sh python
	rm -rf dist
	LIBSQLITE3_FLAGS="-DHAVE_FDATASYNC=1" CARGO_TARGET_DIR=$(CURDIR)/target/dist $(VENV)/bin/maturin build --release --quiet --strip \
		--features bundled-sqlite --compatibility pypi --auditwheel check --out dist \
		-m bindings-python/Cargo.toml
	$(VENV)/bin/maturin sdist --out dist -m bindings-python/Cargo.toml
	cd build/pkg && npm pack --quiet --pack-destination $(CURDIR)/dist
	cp build/component/deadletter-*.component.wasm build/component/deadletter-*.wit dist/
	$(VENV)/bin/twine check --strict dist/*.whl dist/*.tar.gz
	@cd dist && for f in *; do printf '%-48s %9d bytes\n' "$$f" "$$(wc -c <"$$f")"; done

## The artifacts installed where no Rust, maturin or wasm-bindgen is used (tests/install/): the
## wheel and the sdist's own wheel in fresh venvs; the tarball in a fresh npm project, in Node (a
## SQLite file, across processes; IndexedDB on request), tsc, Chromium without a bundler, and an
## esbuild bundle in Chromium; the component with only its host package installed, in a fresh
## venv (wasmtime) and a fresh npm project (jco), running the README's host examples.
test-dist: dist
	scripts/setup.sh browser
	$(PY) -m pytest -q tests/install
	node --test tests/install/
