# Airlock: build, run, test and benchmark.
#   make run     ARGS='--config x.yaml'   release build, then `airlock run ARGS`
#   make dist                             the release binary stripped, as the container image has it: .build/dist/airlock
#   make footprint                        binary size, startup time and RSS (at start, idle clients) beside nginx (root)
#   make footprint-order                  rewrite bench/footprint.order (the functions linked first) from a callgrind run (root)
#   make test                             swift build + swift test (serial); under CI=true (or CONTEXT_CHECK=1) the container build-context check too
#   make bench   [DURATION=.. REPS=.. PATHS=..] [CACHE=1]   loopback benchmark vs nginx/haproxy (CACHE=1: + bench/cache.sh)
#   make fuzz    [FUZZ_SECONDS=60]        libFuzzer over AirlockWire + AirlockSerialization, each target in turn (not in `make test`)
#   make container-check [BINARY=..]      the container image without a container engine (root; not in `make test`)
# `make setup` (a prerequisite of run/test/bench) installs the Debian packages the
# build needs when they are missing (as root), or prints the command to run.

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

SWIFT   ?= swift
SHARED  ?= $(abspath $(CURDIR)/../shared)
ARGS    ?=
CACHE   ?=
BINARY  ?=
FILE    ?=
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := request response chunked
APT_PKGS := libevent-dev libssl-dev liburing-dev libyaml-dev libmimalloc-dev pkg-config binutils curl openssl python3 python3-cryptography
# Only `make test` needs these (Node, headless Chromium and its certutil, tidy, Python's venv).
TEST_APT_PKGS := python3-venv nodejs chromium libnss3-tools tidy
# What the tests import, in a virtual environment of Debian's python3 (so a pyenv or another
# python3 on PATH makes no difference): AirlockTesting's TLSFixtureScripts.python() uses it.
TEST_VENV := .build/test-venv
TEST_PY_PKGS := cryptography requests prometheus_client
RELEASE_BIN := .build/release/airlock
DIST_BIN    := .build/dist/airlock
# The Swift runtime linked into the binary, as docker/Dockerfile builds it (no Foundation, no ICU:
# FoundationEssentials only): RSS at start 16.9 MiB instead of 27.7 (bench/README.md, "Footprint").
# The release binary keeps its symbols (bench/instructions.sh profiles it); `make dist` strips.
# --no-export-dynamic undoes the -export-dynamic of the toolchain's static-stdlib-args.lnk: the
# executable's ~6,300 public Swift symbols leave .dynsym (and stop being --gc-sections roots), so
# the loader no longer reads 440 KiB of .dynsym/.dynstr/.gnu.hash at start (RSS at start -1.1 MiB).
# Nothing looks them up: no dlsym of our own symbols. Linked by the toolchain's lld with
# bench/footprint.order (`make footprint-order` rewrites it): the ~2,600 functions that start the
# gateway and serve requests first in .text, so the 64 KiB windows the kernel maps per code fault
# hold them and little else (RSS at start -2.1 MiB). bench/README.md, "Footprint".
# libstdc++ is linked statically too (the static Swift runtime is C++): STATIC_CXX_DIR holds a
# linker script named libstdc++.so that INPUTs the compiler's libstdc++.a, searched before the
# compiler's own directory, so the toolchain's `-lstdc++` takes the archive: ~80 KiB of it is
# linked, and the loader no longer maps and relocates libstdc++.so.6 (RSS at start -1.0 MiB).
ORDER_FILE  := $(CURDIR)/bench/footprint.order
STATIC_CXX_DIR := $(CURDIR)/.build/static-libstdc++
SWIFT_CLANG ?= $(dir $(realpath $(shell command -v $(SWIFT) 2>/dev/null)))clang
RELEASE_FLAGS := -c release --product airlock --static-swift-stdlib -Xlinker --no-export-dynamic \
	-Xswiftc -use-ld=lld -Xlinker --symbol-ordering-file=$(ORDER_FILE) -Xlinker --no-warn-symbol-ordering \
	-Xswiftc -Xclang-linker -Xswiftc -L$(STATIC_CXX_DIR)
DEBUG_BIN   := .build/debug/airlock

.PHONY: help setup test-setup test-venv check-swift build release dist footprint footprint-order run test check-build-context container-check fuzz bench bench-setup check-config require-file clean

help:
	@echo "make setup                      install missing apt packages: $(APT_PKGS)"
	@echo "make test-setup                 setup, plus $(TEST_APT_PKGS) and the tests' Python ($(TEST_VENV))"
	@echo "make build | release            swift build (debug) | swift build $(RELEASE_FLAGS)"
	@echo "make dist                       the release binary stripped (as in the container image): $(DIST_BIN)"
	@echo "make footprint                  size, startup time, RSS at start and with idle clients, beside nginx (root)"
	@echo "make footprint-order            rewrite bench/footprint.order (functions linked first in .text) from callgrind (root)"
	@echo "make run [ARGS='--config F']    release build, then $(RELEASE_BIN) run ARGS"
	@echo "make test                       swift build, swift test (serial); under CI=true also check-build-context"
	@echo "make check-build-context        build docker/Dockerfile's build stage from what its dockerignore admits"
	@echo "make container-check [BINARY=F] the image's runtime stage via debootstrap + chroot, checked (root)"
	@echo "make fuzz [FUZZ_SECONDS=60]     libFuzzer targets $(FUZZ_TARGETS), one at a time (fuzz/run.sh)"
	@echo "make bench [DURATION= REPS= PATHS=]   benchmark (needs root; SHARED=$(SHARED)); CACHE=1 adds bench/cache.sh"
	@echo "make check-config FILE=F        validate a config file"
	@echo "make clean                      remove .build"

check-swift:
	@command -v $(SWIFT) >/dev/null 2>&1 || { \
	  echo "error: '$(SWIFT)' is not on PATH. Airlock needs the Swift 6.x toolchain for Linux;" >&2; \
	  echo "       install it and add its usr/bin to PATH (e.g. export PATH=/opt/swift/usr/bin:\$$PATH)." >&2; \
	  exit 1; }

# Installs the missing Debian packages among $(1) (as root), or prints the command to run.
define apt_install
missing=(); \
	for p in $(1); do \
	  dpkg-query -W -f='$${Status}' "$$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$$p"); \
	done; \
	if [ $${#missing[@]} -gt 0 ]; then \
	  if [ "$$(id -u)" -ne 0 ]; then \
	    echo "error: missing packages: $${missing[*]}. Install them with:" >&2; \
	    echo "  sudo apt-get update && sudo apt-get install -y --no-install-recommends $${missing[*]}" >&2; \
	    exit 1; \
	  fi; \
	  echo "setup: installing $${missing[*]}"; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get -o DPkg::Lock::Timeout=600 update; \
	  apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends "$${missing[@]}"; \
	fi
endef

setup: check-swift
	@command -v dpkg-query >/dev/null 2>&1 || { \
	  echo "error: dpkg-query not found; this Makefile installs packages on Debian/Ubuntu only." >&2; \
	  echo "       Install by hand: $(APT_PKGS)" >&2; exit 1; }
	@$(call apt_install,$(APT_PKGS)); \
	pkg-config --exists libevent openssl liburing yaml-0.1 || { \
	  echo "error: pkg-config cannot find libevent, openssl, liburing and/or libyaml (libevent-dev, libssl-dev, liburing-dev, libyaml-dev)" >&2; exit 1; }; \
	test -f /usr/include/mimalloc.h || { echo "error: mimalloc.h not found (libmimalloc-dev)" >&2; exit 1; }; \
	echo "setup: ok (libevent $$(pkg-config --modversion libevent), openssl $$(pkg-config --modversion openssl), liburing $$(pkg-config --modversion liburing), libyaml $$(pkg-config --modversion yaml-0.1))"

# What `make test` needs beyond the build: Node, Chromium, certutil, and the tests' Python.
test-setup: setup
	@$(call apt_install,$(TEST_APT_PKGS))
	@$(MAKE) --no-print-directory test-venv

# The tests' Python: Debian's python3 with its own packages visible (python3-cryptography), and
# what PyPI adds; when PyPI cannot be reached, Debian's python3-requests and
# python3-prometheus-client stand in. Fails unless every module imports.
test-venv:
	@py=$(TEST_VENV)/bin/python3; \
	mods=$$(echo $(TEST_PY_PKGS) | tr ' ' ','); \
	if [ -x "$$py" ] && "$$py" -c "import $$mods" 2>/dev/null; then echo "setup: $(TEST_VENV) ok"; exit 0; fi; \
	mkdir -p .build; \
	/usr/bin/python3 -m venv --system-site-packages $(TEST_VENV); \
	"$$py" -m pip install --quiet --disable-pip-version-check $(TEST_PY_PKGS) || \
	  echo "setup: pip install into $(TEST_VENV) failed; trying Debian's packages" >&2; \
	if ! "$$py" -c "import $$mods" 2>/dev/null && [ "$$(id -u)" -eq 0 ]; then \
	  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends \
	    python3-requests python3-prometheus-client; \
	fi; \
	"$$py" -c "import $$mods" || { echo "error: $(TEST_VENV) cannot import $(TEST_PY_PKGS)" >&2; exit 1; }; \
	echo "setup: $(TEST_VENV) ($$("$$py" --version)) imports $(TEST_PY_PKGS)"

build: check-swift
	$(SWIFT) build

release: check-swift $(STATIC_CXX_DIR)/libstdc++.so
	@# SwiftPM does not know the link reads the order file: a newer one removes the binary, so it relinks.
	@if [ -f $(RELEASE_BIN) ] && [ $(ORDER_FILE) -nt $(RELEASE_BIN) ]; then rm -f $(RELEASE_BIN); fi
	$(SWIFT) build $(RELEASE_FLAGS)

$(STATIC_CXX_DIR)/libstdc++.so:
	a=$$($(SWIFT_CLANG) -print-file-name=libstdc++.a); \
	  [ -f "$$a" ] || { echo "error: libstdc++.a not found ($(SWIFT_CLANG) -print-file-name: $$a); install libstdc++-12-dev" >&2; exit 1; }; \
	  mkdir -p $(@D); echo "INPUT($$(realpath "$$a"))" > $@

# Symbols stripped (`install -s`, binutils' strip), as docker/Dockerfile installs it; --gc-sections
# is already SwiftPM's default for release links.
dist: release
	install -D -s -m 0755 $(RELEASE_BIN) $(DIST_BIN)
	@# What RELEASE_FLAGS promise, checked: SwiftPM drops some flags silently (`-Xswiftc -L` never
	@# reaches the link), and each lost one costs ~1 MiB at start (bench/README.md, "Footprint").
	@readelf -p .comment $(RELEASE_BIN) | grep 'Linker: LLD' >/dev/null || { echo "error: $(RELEASE_BIN) was not linked by lld" >&2; exit 1; }
	@first=$$(awk '!/^#/ { print; exit }' $(ORDER_FILE)); \
	  [ "$$(nm -n $(RELEASE_BIN) | awk '$$2 ~ /^[tT]$$/ && !f { print $$3; f = 1 }')" = "$$first" ] || \
	  { echo "error: $(RELEASE_BIN): .text does not start with $$first, the first function of $(ORDER_FILE)" >&2; exit 1; }
	@! readelf -d $(DIST_BIN) | grep 'NEEDED.*libstdc++' >/dev/null || { echo "error: $(DIST_BIN) needs libstdc++.so: libstdc++ was not linked statically" >&2; exit 1; }
	@[ "$$(nm -D --defined-only $(DIST_BIN) | wc -l)" = 0 ] || { echo "error: $(DIST_BIN) exports symbols (--no-export-dynamic lost)" >&2; exit 1; }

footprint: bench-setup dist
	SHARED="$(SHARED)" bash bench/footprint.sh $(abspath $(DIST_BIN))

# Rewrites bench/footprint.order from a callgrind run of the release binary (root; valgrind),
# then relinks with it.
# SwiftPM does not know the order file as an input of the link: the binary is removed so it relinks.
footprint-order: bench-setup release
	SHARED="$(SHARED)" bash bench/footprint.order.sh $(abspath $(RELEASE_BIN))
	rm -f $(RELEASE_BIN)
	$(SWIFT) build $(RELEASE_FLAGS)

run: setup release
	$(RELEASE_BIN) run $(ARGS)

# Integration tests run the debug `airlock` binary, so build everything first.
# Serial on purpose: tests start real servers and the machines have 2 cores.
# The container build-stage check is a second, release build (~2 min): CI runs it (CI=true),
# a developer's `make test` does not unless CONTEXT_CHECK=1 (or `make check-build-context`).
test: test-setup
	$(SWIFT) build
	$(SWIFT) test --no-parallel --disable-swift-testing
	@if [ "$${CI:-}" = true ] || [ "$${CONTEXT_CHECK:-}" = 1 ]; then \
	  $(MAKE) --no-print-directory check-build-context; \
	else \
	  echo "make test: skipped the container build-context check (CI runs it; CONTEXT_CHECK=1 or make check-build-context to run it here)"; \
	fi

# The container image's build stage, run here on exactly what docker/Dockerfile.dockerignore
# admits, with the Dockerfile's own RUN lines (a release build in a scratch directory, ~1-3 min).
check-build-context: setup
	python3 docker/check-build-context.py --self-test

# Opt-in, root: debootstrap + chroot stand in for the runtime image (no container engine);
# BINARY=path skips the build stage and uses a binary built by it.
container-check: setup
	@command -v debootstrap >/dev/null 2>&1 || { \
	  [ "$$(id -u)" -eq 0 ] || { echo "error: make container-check needs root: sudo make container-check" >&2; exit 1; }; \
	  echo "container-check: installing debootstrap"; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get -o DPkg::Lock::Timeout=600 update -qq; \
	  apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends debootstrap; }
	@python3 -c 'import yaml' 2>/dev/null || { [ "$$(id -u)" -eq 0 ] && \
	  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends python3-yaml; }
	BINARY="$(BINARY)" bash docker/container-check.sh

# One fuzzer process at a time, each bounded by FUZZ_SECONDS; every target runs even after a
# finding, and the make fails at the end if any had one (fuzz/run.sh prints the saved input).
fuzz: check-swift
	@failed=(); \
	for t in $(FUZZ_TARGETS); do \
	  bash fuzz/run.sh "$$t" "$(FUZZ_SECONDS)" || failed+=("$$t"); \
	done; \
	if [ $${#failed[@]} -gt 0 ]; then echo "make fuzz: findings in: $${failed[*]}" >&2; exit 1; fi; \
	echo "make fuzz: no findings ($(FUZZ_TARGETS), $(FUZZ_SECONDS)s each)"

bench-setup: setup
	@[ -f "$(SHARED)/bench/setup.sh" ] || { \
	  echo "error: shared bench harness not found at $(SHARED)/bench (set SHARED=...)" >&2; exit 1; }
	@[ "$$(id -u)" -eq 0 ] || { \
	  echo "error: make bench needs root: the shared harness installs wrk nginx haproxy tinyproxy squid" >&2; \
	  echo "       with apt and chowns its server dirs to nobody. Run: sudo make bench" >&2; exit 1; }
	bash "$(SHARED)/bench/setup.sh"
	@# mitmproxy: the interception peer of bench/intercept.sh (PyPI; its rows are skipped without it)
	@command -v mitmdump >/dev/null 2>&1 || python3 -m pip install --quiet mitmproxy || \
	  echo "warning: pip install mitmproxy failed: no mitmproxy rows in the interception table" >&2

bench: bench-setup release
	SHARED="$(SHARED)" AIRLOCK_BIN="$(RELEASE_BIN)" bash bench/run.sh
	@# CACHE=1: also the response cache's rows (bench/cache.sh: hits beside nginx proxy_cache, the miss path)
	if [ "$(CACHE)" = 1 ]; then SHARED="$(SHARED)" bash bench/cache.sh "$(RELEASE_BIN)"; fi

check-config: require-file release
	$(RELEASE_BIN) check-config "$(FILE)"

require-file:
	@[ -n "$(FILE)" ] || { echo "usage: make check-config FILE=path/to/airlock.yaml" >&2; exit 2; }
	@[ -f "$(FILE)" ] || { echo "error: $(FILE): no such file" >&2; exit 2; }

clean:
	rm -rf .build
