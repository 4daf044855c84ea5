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

.PHONY: run test deps configure build test-asan bench clean install

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

bench: build
	./$(BUILD)/bin/chain_scaling

install: build
	cmake --install $(BUILD) --prefix $(or $(PREFIX),/usr/local)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
