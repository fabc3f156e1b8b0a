# The README's two commands: `make demo` and `make test`. Everything else is a step of those.
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
CMAKE_BUILD_TYPE ?= Release
CTEST_ARGS ?=

.PHONY: all deps peer configure build test test-long demo bench format clean

all: build

deps:
	@bash scripts/bootstrap.sh

# The peer of the long studies (mujoco.sysid, studies/peer) in .deps/venv-peer.
peer:
	@bash scripts/bootstrap.sh --peer

# Configure once; CMake re-runs itself when CMakeLists or globbed sources change.
$(BUILD_DIR)/Makefile: .deps/paths.cmake
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(CMAKE_BUILD_TYPE)

.deps/paths.cmake: deps

configure: deps $(BUILD_DIR)/Makefile

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

# Default suite: everything not labelled `long`. It builds only what it runs (the target
# heft_default_suite: no bench/, no long studies' programs); a long program not built appears to
# ctest as test_<module>_long_NOT_BUILT, left out with the rest of the long label.
test: configure
	cmake --build $(BUILD_DIR) -j $(JOBS) --target heft_default_suite
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) -LE long -E '^test_[a-z_]+_long_NOT_BUILT$$' $(CTEST_ARGS)

# Long studies and slow checks.
test-long: build peer
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) -L long $(CTEST_ARGS)

demo: build
	@bash scripts/demo.sh $(BUILD_DIR)

bench: build
	@for b in $(BUILD_DIR)/bin/bench_*; do echo "== $$b"; $$b --benchmark_repetitions=5 --benchmark_report_aggregates_only=true || exit 1; done
	@if [ -x $(BUILD_DIR)/python/venv/bin/python ]; then echo "== bench/python_filter_loop.py"; $(BUILD_DIR)/python/venv/bin/python bench/python_filter_loop.py; fi

format:
	clang-format -i $$(git ls-files '*.hpp' '*.cpp')

clean:
	rm -rf $(BUILD_DIR)
