# Developer shortcuts; the README's two commands are all a newcomer needs.
.PHONY: install develop test rust-test lint lint-fast tables bench clean

install:            ## build the Rust core and install the package
	pip install .

develop:            ## editable install (Python changes apply at once; rerun after Rust changes)
	pip install -e ".[test]"

test:               ## what CI runs
	bash .ci/run

rust-test:
	cargo test

lint:               ## formatting, lints and types, Rust and Python (CI runs it)
	python tools/check_source.py
	cargo fmt --check
	cargo clippy --quiet --all-targets -- -D warnings
	cargo clippy --quiet --all-targets --features python -- -D warnings
	ruff check
	mypy

lint-fast:          ## the quick part of lint (formatting, ruff), as the pre-commit hooks run it
	cargo fmt --check
	ruff check

tables:             ## regenerate the committed Unicode tables
	python tools/gen_unicode_tables.py

clean:
	rm -rf target dist build .pytest_cache .hypothesis
