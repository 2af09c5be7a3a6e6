# ibqos: `make demo` and `make test` are the two commands a new machine needs.
# Debian's interpreter, not the first python3 on PATH: the .deb and `make install` run ibqos
# on /usr/bin/python3 and build with the pip its venv brings (23.0.1 on Debian 12), so the tests
# must too (a pyenv python3 ahead on PATH once hid a pip option Debian's pip lacks)
PYTHON ?= /usr/bin/python3
VENV   := .venv
BUILD  := build
IBQOS  := $(VENV)/bin/ibqos
PYTEST := $(VENV)/bin/pytest
CMAKE_BUILD_TYPE ?= RelWithDebInfo
PREFIX ?= /usr
DESTDIR ?=

SAN_BUILD := build-sanitize
# -Werror (CMake option IBQOS_WERROR): off for a plain build, on for the test targets below
WERROR ?= OFF

# The patched ibsim's source (ci-sim/ibsim-patch/build.sh): upstream's ibsim 0.10 release
# tarball when one is kept in a shared/vendor/ beside the checkout, or beside the checkout this
# one was cloned from (`git clone /path/main /tmp/x`), checked by its sha256; else Debian's
# source package through apt-get source.
CLONED_FROM := $(shell git config --get remote.origin.url 2>/dev/null)
IBSIM_SOURCE ?= $(firstword $(wildcard $(CURDIR)/../shared/vendor/ibsim-0.10.tar.gz \
	$(if $(CLONED_FROM),$(CLONED_FROM)/../shared/vendor/ibsim-0.10.tar.gz)))
export IBSIM_SOURCE
FUZZ_RUNS ?= 2000000

.PHONY: all deps lock build lint ibsim-patched install deb paper format test test-floors test-sanitize test-mutation test-apply-many fuzz fuzz-policy fuzz-tables fuzz-cli demo bench clean

all: build

deps: $(VENV)/.installed
	@scripts/install-deps.sh

# The Python side is locked (requirements/, written by `make lock`): every package pinned with
# its hashes, installed hash-checked, then this checkout in editable mode on top with nothing
# resolved. dev.txt is the runtime lock plus the test and plot extras, runtime.txt the runtime
# alone (the installed tool, the .deb).
LOCK := requirements
$(VENV)/.installed: pyproject.toml $(LOCK)/dev.txt $(LOCK)/runtime.txt scripts/install-deps.sh
	@scripts/install-deps.sh
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --require-hashes -r $(LOCK)/dev.txt
	$(VENV)/bin/pip install -q --no-deps --no-build-isolation -e .
	@# the runtime lock's wheels, hash-checked: `make install` builds the installed tool's
	@# environment from them, and test_wheel.py a fresh venv, both offline
	rm -rf $(VENV)/wheelhouse
	$(VENV)/bin/pip download -q --require-hashes --only-binary :all: -d $(VENV)/wheelhouse -r $(LOCK)/runtime.txt
	@touch $@

# Rewrites the lock files from pyproject.toml's ranges (uv, pinned, in its own venv): the
# newest versions for runtime.txt and dev.txt (dev.txt constrained to runtime.txt's pins), and
# floors.txt, every direct dependency at its lowest allowed version (`make test-floors`).
UV_VERSION ?= 0.13.9
UV_COMPILE = .venv-lock/bin/uv pip compile pyproject.toml -q --python-version 3.11 --generate-hashes --custom-compile-command 'make lock'
lock:
	test -x .venv-lock/bin/uv || { $(PYTHON) -m venv .venv-lock && .venv-lock/bin/pip install -q uv==$(UV_VERSION); }
	$(UV_COMPILE) --upgrade -o $(LOCK)/runtime.txt
	$(UV_COMPILE) --upgrade --extra test --extra plot --extra mutation -c $(LOCK)/runtime.txt -o $(LOCK)/dev.txt
	$(UV_COMPILE) --upgrade --extra test --extra plot --resolution lowest-direct -o $(LOCK)/floors.txt

# The suite's fast part (neither `fabric` nor `slow`) in its own venv at the floors: the
# lowest version pyproject.toml allows of every direct dependency (floors.txt). A floor that
# does not hold fails here.
FLOORS_VENV := .venv-floors
$(FLOORS_VENV)/.installed: pyproject.toml $(LOCK)/floors.txt
	rm -rf $(FLOORS_VENV)
	$(PYTHON) -m venv $(FLOORS_VENV)
	$(FLOORS_VENV)/bin/pip install -q --require-hashes -r $(LOCK)/floors.txt
	$(FLOORS_VENV)/bin/pip install -q --no-deps --no-build-isolation -e .
	@touch $@

test-floors: build $(FLOORS_VENV)/.installed
	$(FLOORS_VENV)/bin/pytest -q -p no:cacheprovider -n $(TEST_JOBS) --dist worksteal -m "not fabric and not slow"

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(CMAKE_BUILD_TYPE) -DCMAKE_INSTALL_PREFIX=$(PREFIX) -DIBQOS_WERROR=$(WERROR) >/dev/null
	cmake --build $(BUILD) -j 2

# ibsim 0.10 from Debian's source package with ci-sim/ibsim-patch/0001-vlarb-64-and-vlhighlimit.patch
# (64-entry VLArb tables, VLHighLimit stored; docs/ibsim.md), in build/ibsim-patched/. `make build`
# builds it once (CMake target ibsim-patched); this target builds it again, e.g. with
# IBSIM_SOURCE=<.dsc | ibsim-0.10 tarball | source tree> where the archive has no source.
ibsim-patched: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(CMAKE_BUILD_TYPE) -DCMAKE_INSTALL_PREFIX=$(PREFIX) -DIBQOS_WERROR=$(WERROR) >/dev/null
	rm -f $(BUILD)/ibsim-patched/stamp
	cmake --build $(BUILD) --target ibsim-patched ibsim-smp-rw

format: deps
	$(VENV)/bin/ruff format .
	git ls-files '*.c' '*.h' | xargs clang-format -i

# The plugin where Debian's OpenSM dlopen()s it (libdir/libibqos.so), the C tools, the
# simulator core and the templates (CMake); the `ibqos` command in a private environment under
# PREFIX/lib/ibqos built from the runtime lock's wheels, hash-checked, with a /usr/bin launcher
# (scripts/install-python.sh: the system Python's packages are not touched); the man pages and
# bash completion generated from the CLI (scripts/cli_docs.py); /etc/ibqos for policies and
# plans. `make deb` packages the same tree.
SYSCONFDIR ?= /etc
install: build
	DESTDIR=$(DESTDIR) cmake --install $(BUILD) --prefix $(PREFIX)
	scripts/install-python.sh $(VENV)/bin/pip "$(DESTDIR)" $(PREFIX) $(BUILD)/ibqos_layout.json \
		$(VENV)/wheelhouse $(LOCK)/runtime.txt
	rm -rf $(BUILD)/cli-docs
	$(VENV)/bin/python scripts/cli_docs.py $(BUILD)/cli-docs
	install -d -m 0755 "$(DESTDIR)$(PREFIX)/share/man/man1" "$(DESTDIR)$(PREFIX)/share/bash-completion/completions"
	install -m 0644 $(BUILD)/cli-docs/man1/*.1 "$(DESTDIR)$(PREFIX)/share/man/man1/"
	install -m 0644 $(BUILD)/cli-docs/bash-completion/ibqos "$(DESTDIR)$(PREFIX)/share/bash-completion/completions/ibqos"
	install -d -m 0755 "$(DESTDIR)$(SYSCONFDIR)/ibqos"

# The Debian package (debian/, debhelper): `make install` into debian/ibqos, then
# $(BUILD)/deb/ibqos_<version>_<arch>.deb; debian/ is left clean. Its Build-Depends come with
# `make deps`.
deb: deps
	dpkg-checkbuilddeps
	DEB_RULES_REQUIRES_ROOT=no debian/rules clean
	DEB_RULES_REQUIRES_ROOT=no debian/rules binary
	DEB_RULES_REQUIRES_ROOT=no debian/rules clean

# Lint, format and type checks, all configured in pyproject.toml: ruff's rule set over the
# whole tree, mypy over every product package (strict on ibqos); clang-format (.clang-format).
# `make format` fixes the format, `ruff check --fix` what ruff can.
lint: deps
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	git ls-files '*.c' '*.h' | xargs clang-format --dry-run --Werror

# pytest-xdist's workers: most fabric tests wait on OpenSM's sweeps, so two workers on two cores
# halve the suite's time (every test's processes, sockets and files are its own: the harness puts
# the worker's PID in IBSIM_SOCKNAME, and no_leaked_processes looks at those alone).
TEST_JOBS ?= 2

# (`build` includes the patched ibsim, so its tests run here, or skip with build.sh's reason.)
# The lint step, the C unit tests (ctest: dla's routing library, the simulator core), then
# every pytest. The C is built with -Werror here: a warning fails.
test test-sanitize test-floors: WERROR = ON
test: build lint
	cd $(BUILD) && ctest --output-on-failure -j $(TEST_JOBS)
	$(PYTEST) -q -n $(TEST_JOBS) --dist worksteal

# ASan/UBSan build of every C component in its own directory; its C tests (ctest), then one
# dla run in OpenSM with the sanitized plugin preloaded with libasan.
test-sanitize: build
	cmake -S . -B $(SAN_BUILD) -DIBQOS_SANITIZE=ON -DIBQOS_WERROR=$(WERROR) -DCMAKE_BUILD_TYPE=Debug >/dev/null
	cmake --build $(SAN_BUILD) -j 2
	cd $(SAN_BUILD) && ctest --output-on-failure -j $(TEST_JOBS)
	IBQOS_BUILD_DIR=$(CURDIR)/$(SAN_BUILD) $(PYTEST) -q -p no:cacheprovider plugin/tests/sanitize_dla_run.py

# Mutation testing of the core's arbiter, planner and verifier (mutmut, [tool.mutmut] in
# pyproject.toml) with their fast unit tests, one test process at a time: prints the score
# (killed/survived/total); the survivors are in build/mutation/results.txt and explained in
# docs/mutation.md. Not part of `make test`: about 40 minutes here.
test-mutation: deps
	VENV=$(CURDIR)/$(VENV) scripts/test-mutation.sh

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
	rm -rf $(BUILD) $(SAN_BUILD) $(VENV) $(FLOORS_VENV) .venv-lock
