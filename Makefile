# Two commands matter: `make run` and `make test`. Each installs what is missing first.
# `make run` builds only the moehub program, with link-time optimisation, in build/.
# `make test` builds the model-level, sweep and end-to-end tests and a moehub without link-time
# optimisation (same results, a quicker build) in build-test/, runs them, then the unit tests
# under the sanitizers in build-asan/ (build times from a clean clone: docs/performance/build-and-test.md).
BUILD_DIR ?= build
TEST_DIR ?= build-test
ASAN_DIR ?= build-asan
FUZZ_DIR ?= build-fuzz
FUZZ_SECONDS ?= 60
JOBS ?= $(shell nproc)
CTEST_ARGS ?=
# Ninja for a new build folder (it compiles a library's sources without waiting for the
# libraries below it); an existing folder keeps the generator it was made with.
generator = $(if $(wildcard $(1)/CMakeCache.txt),,-G Ninja)

.PHONY: deps configure build build-all run test test-release test-asan bench fuzz clean

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

# -O1, not CMake's Release -O3: the same results byte for byte (no fast-math, no FP contraction),
# 15 % less compile CPU for the whole test tree than -O2, for a program 6-17 % slower on the
# default run; `make test` is build-bound (docs/performance/build-and-test.md, session 22).
# The test programs' own code at -O0 (session 24): 20-40 % less of their compile CPU, the same tests.
# The unit tests run under the sanitizers (test-asan), not a second time here (session 25).
test-release: deps
	@cmake -S . -B $(TEST_DIR) $(call generator,$(TEST_DIR)) -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -DNDEBUG" -DMOEHUB_TEST_PROGRAM_FLAGS=-O0 -DMOEHUB_RELEASE_UNIT_TESTS=OFF -DMOEHUB_LTO=OFF -DMOEHUB_BUILD_BENCH=OFF >/dev/null
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

# libFuzzer (Clang) on the config, --set, unit and routing-trace parsers, FUZZ_SECONDS each,
# from the seeds in fuzz/corpus; new inputs go to $(FUZZ_DIR)/corpus, crashes to $(FUZZ_DIR).
fuzz:
	@bash scripts/install-deps.sh fuzz
	@CC=clang CXX=clang++ cmake -S . -B $(FUZZ_DIR) $(call generator,$(FUZZ_DIR)) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMOEHUB_FUZZ=ON -DMOEHUB_LTO=OFF -DMOEHUB_BUILD_TESTS=OFF -DMOEHUB_BUILD_BENCH=OFF >/dev/null
	@cmake --build $(FUZZ_DIR) -j $(JOBS) --target moehub_fuzz_config moehub_fuzz_set moehub_fuzz_units moehub_fuzz_trace
	@for t in config set units trace; do \
	  mkdir -p $(FUZZ_DIR)/corpus/$$t; \
	  $(FUZZ_DIR)/fuzz/moehub_fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	    -artifact_prefix=$(FUZZ_DIR)/ $(FUZZ_DIR)/corpus/$$t fuzz/corpus/$$t > $(FUZZ_DIR)/fuzz_$$t.log 2>&1 \
	    || { tail -40 $(FUZZ_DIR)/fuzz_$$t.log; exit 1; }; \
	  echo "fuzz $$t: $$(grep -o 'number_of_executed_units: [0-9]*' $(FUZZ_DIR)/fuzz_$$t.log) in $(FUZZ_SECONDS) s, no crash"; \
	done

clean:
	rm -rf $(BUILD_DIR) $(TEST_DIR) $(ASAN_DIR) $(FUZZ_DIR)
