# kvmark's entry points. `make run` and `make test` are the two commands in the README;
# both install what they need first (scripts/setup), so they work on a fresh machine.

CARGO ?= cargo

.PHONY: setup run test quick bench help

help:
	@echo "make run    build kvmark and benchmark workloads/mixed.lua on the in-memory engine"
	@echo "make test   format check, clippy and the whole test suite (with private Redis and PostgreSQL servers)"
	@echo "make quick  fast development build without the C/C++ engines"
	@echo "make bench  the recorded benchmarks (see BENCHMARKS.md)"

setup:
	@scripts/setup

run: setup
	$(CARGO) run --release -- workloads/mixed.lua

# Everything in the release profile, so the engines' C/C++ code is compiled once and
# shared by the build, clippy and the tests. The tests run with private Redis and
# PostgreSQL servers (scripts/with-servers), stopped afterwards even when a test fails.
test: setup
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --release --all-targets -- -D warnings
	scripts/with-servers $(CARGO) test --release

quick:
	$(CARGO) build --release --no-default-features

bench: setup
	bench/run-all.sh
