# Two commands matter: `make run` and `make test`. Each installs what is missing first.
# `make run` builds only the moehub program, with link-time optimisation, in build/.
# `make test` builds the tests and a moehub without link-time optimisation (same results, a
# quicker build) in build-test/, runs them, then the unit tests under the sanitizers in
# build-asan/ (build times from a clean clone: docs/PERFORMANCE.md).
BUILD_DIR ?= build
TEST_DIR ?= build-test
ASAN_DIR ?= build-asan
JOBS ?= $(shell nproc)
CTEST_ARGS ?=
# Ninja for a new build folder (it compiles a library's sources without waiting for the
# libraries below it); an existing folder keeps the generator it was made with.
generator = $(if $(wildcard $(1)/CMakeCache.txt),,-G Ninja)

.PHONY: deps configure build build-all run test test-release test-asan bench clean

deps:
	@bash scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD_DIR) $(call generator,$(BUILD_DIR)) -DCMAKE_BUILD_TYPE=Release >/dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target moehub

build-all: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

run: build
	$(BUILD_DIR)/moehub run

test-release: deps
	@cmake -S . -B $(TEST_DIR) $(call generator,$(TEST_DIR)) -DCMAKE_BUILD_TYPE=Release -DMOEHUB_LTO=OFF -DMOEHUB_BUILD_BENCH=OFF >/dev/null
	@cmake --build $(TEST_DIR) -j $(JOBS)
	cd $(TEST_DIR) && ctest --output-on-failure -j $(JOBS) $(CTEST_ARGS)

# A second build of the unit tests under AddressSanitizer and UndefinedBehaviorSanitizer.
test-asan: deps
	@cmake -S . -B $(ASAN_DIR) $(call generator,$(ASAN_DIR)) -DCMAKE_BUILD_TYPE=Debug -DMOEHUB_SANITIZE=ON -DMOEHUB_BUILD_BENCH=OFF >/dev/null
	@cmake --build $(ASAN_DIR) -j $(JOBS) --target moehub_unit_tests
	cd $(ASAN_DIR) && ctest --output-on-failure -j $(JOBS) -L unit $(CTEST_ARGS)

test: test-release test-asan

# The benchmarks (Google Benchmark), built beside the program.
bench: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target moehub_bench_sim moehub_bench_net moehub_bench_gpu
	$(BUILD_DIR)/bench/moehub_bench_sim

clean:
	rm -rf $(BUILD_DIR) $(TEST_DIR) $(ASAN_DIR)
