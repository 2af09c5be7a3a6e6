# ibqos: `make demo` and `make test` are the two commands a new machine needs.
PYTHON ?= python3
VENV   := .venv
BUILD  := build
IBQOS  := $(VENV)/bin/ibqos
PYTEST := $(VENV)/bin/pytest
CMAKE_BUILD_TYPE ?= RelWithDebInfo
PREFIX ?= /usr
DESTDIR ?=

SAN_BUILD := build-sanitize

# The patched ibsim's source (ci-sim/ibsim-patch/build.sh): upstream's ibsim 0.10 release
# tarball when one is kept in a shared/vendor/ beside the checkout (checked by its sha256),
# else Debian's source package through apt-get source.
IBSIM_SOURCE ?= $(firstword $(wildcard $(CURDIR)/../shared/vendor/ibsim-0.10.tar.gz))
export IBSIM_SOURCE
FUZZ_RUNS ?= 2000000

.PHONY: all deps build ibsim-patched install paper format test test-sanitize test-apply-many fuzz fuzz-policy fuzz-tables fuzz-cli demo bench clean

all: build

deps: $(VENV)/.installed
	@scripts/install-deps.sh

$(VENV)/.installed: pyproject.toml scripts/install-deps.sh
	@scripts/install-deps.sh
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[test,plot]'
	@# the runtime dependencies as wheels, without the extras: test_wheel.py installs the
	@# built ibqos wheel from them into a fresh venv, offline
	rm -rf $(VENV)/wheelhouse
	$(VENV)/bin/pip download -q --no-build-isolation -d $(VENV)/wheelhouse .
	@touch $@

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(CMAKE_BUILD_TYPE) -DCMAKE_INSTALL_PREFIX=$(PREFIX) >/dev/null
	cmake --build $(BUILD) -j 2

# ibsim 0.10 from Debian's source package with ci-sim/ibsim-patch/0001-vlarb-64-and-vlhighlimit.patch
# (64-entry VLArb tables, VLHighLimit stored; docs/ibsim.md), in build/ibsim-patched/. `make build`
# builds it once (CMake target ibsim-patched); this target builds it again, e.g. with
# IBSIM_SOURCE=<.dsc | ibsim-0.10 tarball | source tree> where the archive has no source.
ibsim-patched: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(CMAKE_BUILD_TYPE) -DCMAKE_INSTALL_PREFIX=$(PREFIX) >/dev/null
	rm -f $(BUILD)/ibsim-patched/stamp
	cmake --build $(BUILD) --target ibsim-patched ibsim-smp-rw

format: deps
	$(VENV)/bin/ruff format .
	git ls-files '*.c' '*.h' | xargs clang-format -i

# The plugin where Debian's OpenSM dlopen()s it (libdir/libibqos.so), the C tools, the
# simulator core, the templates and the Python packages with an `ibqos` launcher. The
# Python dependencies (pydantic >= 2, ...) are not Debian 12 packages: see README.
install: build
	DESTDIR=$(DESTDIR) cmake --install $(BUILD) --prefix $(PREFIX)
	scripts/install-python.sh $(VENV)/bin/pip "$(DESTDIR)" $(PREFIX) $(BUILD)/ibqos_layout.json

# (`build` includes the patched ibsim, so its tests run here, or skip with build.sh's reason.)
# Lint, format and type checks (ruff and mypy --strict on the core, configured in pyproject.toml;
# clang-format, .clang-format;
# `make format` fixes the format),
# the C unit tests (ctest: dla's routing library,
# the simulator core), then every pytest.
test: build
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	git ls-files '*.c' '*.h' | xargs clang-format --dry-run --Werror
	cd $(BUILD) && ctest --output-on-failure
	$(PYTEST) -q

# ASan/UBSan build of every C component in its own directory; its C tests (ctest), then one
# dla run in OpenSM with the sanitized plugin preloaded with libasan.
test-sanitize: build
	cmake -S . -B $(SAN_BUILD) -DIBQOS_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
	cmake --build $(SAN_BUILD) -j 2
	cd $(SAN_BUILD) && ctest --output-on-failure
	IBQOS_BUILD_DIR=$(CURDIR)/$(SAN_BUILD) $(PYTEST) -q -p no:cacheprovider plugin/tests/sanitize_dla_run.py

# 500 consecutive applies on one daemon OpenSM (make test runs 50): ~6 minutes.
test-apply-many: build
	IBQOS_APPLY_MANY=500 $(PYTEST) -q manager/tests/test_apply_journal.py -k many_applies

# The long fuzz runs: the table-file parser under libFuzzer for FUZZ_RUNS executions (make test
# runs 30,000) and the policy fuzzer for FUZZ_POLICIES policies (make test runs 150).
FUZZ_POLICIES ?= 100000
fuzz: fuzz-tables fuzz-policy fuzz-cli

fuzz-tables: deps
	plugin/tests/fuzz/run.sh $(FUZZ_RUNS) $(CURDIR)/$(BUILD)/fuzz

fuzz-policy: build
	cd manager/tests && ../../$(VENV)/bin/python policy_fuzz.py $(FUZZ_POLICIES)

# Mutated plan.json and fabric.json documents through analyze, render and verify, FUZZ_CLI
# per kind with a fresh seed (make test runs 60 with a fixed one): exit 0/1/2 only, one
# error line naming the file, nothing written on error (manager/tests/test_hostile_inputs.py).
FUZZ_CLI ?= 5000
fuzz-cli: build
	IBQOS_FUZZ_CLI=$(FUZZ_CLI) $(PYTEST) -q -p no:cacheprovider manager/tests/test_hostile_inputs.py -k mutated

demo: build
	$(IBQOS) demo

# Seed 003 §5.1 (buffers, VOQ, engines) on real OpenSM + the simulator: figures and Table 1
# with the paper's values beside ours, in bench/results/paper-seed003/, for four switch models
# (about 10 CPU minutes). The paper's model alone (docs/simulator.md, "Switch model"):
# make paper PAPER_ARGS="--input-reads 1 --voq-buffers per-output".
paper: build
	$(IBQOS) paper seed003-5.1 --out bench/results/paper-seed003 $(PAPER_ARGS)

bench: build
	$(VENV)/bin/python -m bench.run $(BENCH_ARGS)

clean:
	rm -rf $(BUILD) $(SAN_BUILD) $(VENV)
