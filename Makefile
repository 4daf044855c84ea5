# noether — the two commands a new user types: `make run` and `make test`.
# Everything else here is plumbing for those two.

BUILD      ?= build
ASAN_BUILD ?= build-asan
BUILD_TYPE ?= RelWithDebInfo
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
SCENE      ?= scripts/examples/fourbar_chain.lua
DEPS_FILE  := deps/debian.txt
PKGS       := $(shell grep -v '^\s*\#' $(DEPS_FILE) | grep -v '^\s*$$')
SUDO       := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
CMAKE_GEN  := -G Ninja

FUZZ_BUILD   ?= build-fuzz
FUZZ_SECONDS ?= 600
MODELS_DIR   ?= $(or $(NOETHER_MODELS_DIR),../shared/models)

.PHONY: run test deps configure build test-asan bench bench-peers bench-contact clean install fuzz

run: build
	./$(BUILD)/bin/noether run $(SCENE)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# Install every missing Debian package listed in deps/debian.txt (apt-get update first).
deps:
	@missing=""; for p in $(PKGS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "noether: installing missing Debian packages:$$missing"; \
	  $(SUDO) apt-get update -q && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q --no-install-recommends $$missing; \
	fi

$(BUILD)/build.ninja: | deps
	cmake -S . -B $(BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)

configure: deps $(BUILD)/build.ninja

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# The whole suite once more under AddressSanitizer + UBSan (second build directory).
test-asan: deps
	cmake -S . -B $(ASAN_BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Debug -DNOETHER_SANITIZE=ON -DNOETHER_BUILD_BENCH=OFF
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && NOETHER_SANITIZED=1 ctest --output-on-failure -j $(JOBS)

# libFuzzer on the URDF and MJCF pipelines, on Lua scenes in the sandbox, on the recording reader and on saved states, FUZZ_SECONDS each (clang;
# installed if missing). Seeds: tests/fuzz/seeds, the example scenes and the shared models;
# findings land in $(FUZZ_BUILD)/findings — add each (minimised) to tests/fuzz/regressions.
fuzz: deps
	@dpkg-query -W -f='$${Status}' clang 2>/dev/null | grep -q "install ok installed" || \
	  (DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q --no-install-recommends clang)
	CC=clang CXX=clang++ cmake -S . -B $(FUZZ_BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNOETHER_FUZZ=ON \
	  -DNOETHER_BUILD_TESTS=OFF -DNOETHER_BUILD_BENCH=OFF
	cmake --build $(FUZZ_BUILD) -j $(JOBS)
	mkdir -p $(FUZZ_BUILD)/corpus/urdf $(FUZZ_BUILD)/corpus/mjcf $(FUZZ_BUILD)/corpus/lua $(FUZZ_BUILD)/corpus/recording \
	  $(FUZZ_BUILD)/corpus/state $(FUZZ_BUILD)/findings
	cp tests/fuzz/seeds/urdf/* tests/fuzz/regressions/urdf/* $(FUZZ_BUILD)/corpus/urdf/
	cp tests/fuzz/seeds/mjcf/* $(FUZZ_BUILD)/corpus/mjcf/
	-cp tests/fuzz/regressions/mjcf/* $(FUZZ_BUILD)/corpus/mjcf/ 2>/dev/null
	cp tests/fuzz/seeds/lua/* tests/fuzz/regressions/lua/* scripts/examples/*.lua $(FUZZ_BUILD)/corpus/lua/
	cp tests/fuzz/seeds/recording/* tests/fuzz/regressions/recording/* $(FUZZ_BUILD)/corpus/recording/
	cp tests/fuzz/seeds/state/* $(FUZZ_BUILD)/corpus/state/
	-cp tests/fuzz/regressions/state/* $(FUZZ_BUILD)/corpus/state/ 2>/dev/null
	-find $(MODELS_DIR) -name '*.urdf' -size -64k -exec cp {} $(FUZZ_BUILD)/corpus/urdf/ \; 2>/dev/null
	-find $(MODELS_DIR) -name '*.xml' -size -64k -exec cp {} $(FUZZ_BUILD)/corpus/mjcf/ \; 2>/dev/null
	cd $(FUZZ_BUILD) && NOETHER_PLUGIN_PATH= ./bin/fuzz_urdf corpus/urdf -max_total_time=$(FUZZ_SECONDS) \
	  -max_len=65536 -timeout=30 -rss_limit_mb=4096 -artifact_prefix=findings/urdf- -print_final_stats=1
	cd $(FUZZ_BUILD) && NOETHER_PLUGIN_PATH= ./bin/fuzz_mjcf corpus/mjcf -max_total_time=$(FUZZ_SECONDS) \
	  -max_len=65536 -timeout=30 -rss_limit_mb=4096 -artifact_prefix=findings/mjcf- -print_final_stats=1
	cd $(FUZZ_BUILD) && NOETHER_PLUGIN_PATH= ./bin/fuzz_lua corpus/lua -max_total_time=$(FUZZ_SECONDS) \
	  -max_len=16384 -timeout=30 -rss_limit_mb=4096 -artifact_prefix=findings/lua- -print_final_stats=1
	cd $(FUZZ_BUILD) && ./bin/fuzz_recording corpus/recording -max_total_time=$(FUZZ_SECONDS) \
	  -max_len=65536 -timeout=30 -rss_limit_mb=4096 -artifact_prefix=findings/recording- -print_final_stats=1
	cd $(FUZZ_BUILD) && NOETHER_PLUGIN_PATH= ./bin/fuzz_state corpus/state -max_total_time=$(FUZZ_SECONDS) \
	  -max_len=130 -timeout=30 -rss_limit_mb=4096 -artifact_prefix=findings/state- -print_final_stats=1

bench: build
	./$(BUILD)/bin/chain_scaling

# Peer benchmarks: needs the peers' Debian packages (not installed by `make deps`: they are never a
# dependency of the engine) and matplotlib; regenerates docs/benchmarks.md (tens of minutes).
PEER_PACKAGES := libmujoco-dev libdart-dev libsimbody-dev python3-matplotlib
# Debian's python3 (its matplotlib), also when another python3 comes first on PATH.
PEER_PYTHON := $(shell [ -x /usr/bin/python3 ] && echo /usr/bin/python3 || echo python3)
bench-peers:
	@missing=$$(for p in $(PEER_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing the peer engines: $$missing"; \
	  $(SUDO) apt-get install -y $$missing; \
	fi
	$(MAKE) build
	test -x $(BUILD)/bin/peers || { echo "bench-peers: build/bin/peers was not built (see cmake's 'peer benchmarks' line)"; exit 1; }
	$(PEER_PYTHON) bench/peers/report.py --peers $(BUILD)/bin/peers --out docs/benchmarks.md $(PEER_ARGS)

# Contacts, friction and limits against MuJoCo: bench/contact_peers.cpp (docs/contact.md, "Against MuJoCo").
bench-contact:
	@dpkg -s libmujoco-dev >/dev/null 2>&1 || { echo "installing libmujoco-dev"; $(SUDO) apt-get install -y libmujoco-dev; }
	$(MAKE) configure build
	test -x $(BUILD)/bin/contact_peers || { echo "bench-contact: build/bin/contact_peers was not built (libmujoco-dev not found by cmake)"; exit 1; }
	$(BUILD)/bin/contact_peers --rounds 3 --out bench/results/contact_peers_ci-2core.jsonl

install: build
	cmake --install $(BUILD) --prefix $(or $(PREFIX),/usr/local)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
