# ibqos: `make demo` and `make test` are the two commands a new machine needs.
PYTHON ?= python3
VENV   := .venv
BUILD  := build
IBQOS  := $(VENV)/bin/ibqos
PYTEST := $(VENV)/bin/pytest
CMAKE_BUILD_TYPE ?= RelWithDebInfo

.PHONY: all deps build test test-apply-many fuzz-policy demo bench clean

all: build

deps: $(VENV)/.installed
	@scripts/install-deps.sh

$(VENV)/.installed: pyproject.toml scripts/install-deps.sh
	@scripts/install-deps.sh
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[test]'
	@touch $@

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(CMAKE_BUILD_TYPE) >/dev/null
	cmake --build $(BUILD) -j 2

test: build
	$(PYTEST) -q

# 500 consecutive applies on one daemon OpenSM (make test runs 50): ~6 minutes.
test-apply-many: build
	IBQOS_APPLY_MANY=500 $(PYTEST) -q manager/tests/test_apply_journal.py -k many_applies

# The policy fuzzer's long run (make test runs 150 examples): FUZZ_POLICIES=100000 by default.
FUZZ_POLICIES ?= 100000
fuzz-policy: build
	cd manager/tests && ../../$(VENV)/bin/python policy_fuzz.py $(FUZZ_POLICIES)

# `make fuzz` runs every long fuzzer; the table-file fuzzer adds its own prerequisite.
.PHONY: fuzz
fuzz: fuzz-policy

demo: build
	$(IBQOS) demo

bench: build
	$(VENV)/bin/python -m bench.run $(BENCH_ARGS)

clean:
	rm -rf $(BUILD) $(VENV)
