# The two commands of the README: `make demo` and `make test`. Both install what they need first
# (scripts/setup.sh is idempotent).
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
PYLIB := $(shell python3 -c 'import sysconfig; print(sysconfig.get_config_var("LIBDIR"))')
# Rust test binaries that link pyo3 need the interpreter's shared library.
export LD_LIBRARY_PATH := $(PYLIB):$(LD_LIBRARY_PATH)
export PYO3_PYTHON := $(CURDIR)/$(PY)

.PHONY: demo test setup python test-rust test-python lint

setup:
	scripts/setup.sh all

## Builds the Python extension into .venv (maturin gets its own target dir so pyo3 is not rebuilt).
python:
	scripts/setup.sh python
	VIRTUAL_ENV=$(CURDIR)/$(VENV) CARGO_TARGET_DIR=$(CURDIR)/target/maturin \
		$(VENV)/bin/maturin develop --release --quiet -m bindings-python/Cargo.toml

demo: python
	$(PY) examples/webhook_relay.py

test: lint test-rust test-python

lint:
	cargo fmt --all --check
	cargo clippy --workspace --all-targets --all-features -- -D warnings

test-rust: python
	cargo test --workspace --all-features

test-python: python
	$(PY) -m pytest -q bindings-python/tests
