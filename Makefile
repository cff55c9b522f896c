# Two commands matter: `make run` and `make test`. Each installs what is missing first.
BUILD_DIR ?= build
ASAN_DIR ?= build-asan
JOBS ?= $(shell nproc)
CTEST_ARGS ?=

.PHONY: deps build run test test-release test-asan bench clean

deps:
	@bash scripts/install-deps.sh

build: deps
	@cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BUILD_DIR) -j $(JOBS)

run: build
	$(BUILD_DIR)/moehub run

test-release: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) $(CTEST_ARGS)

# A second build of the unit tests under AddressSanitizer and UndefinedBehaviorSanitizer.
test-asan: deps
	@cmake -S . -B $(ASAN_DIR) -DCMAKE_BUILD_TYPE=Debug -DMOEHUB_SANITIZE=ON -DMOEHUB_BUILD_BENCH=OFF >/dev/null
	@cmake --build $(ASAN_DIR) -j $(JOBS) --target moehub_unit_tests
	cd $(ASAN_DIR) && ctest --output-on-failure -j $(JOBS) -L unit $(CTEST_ARGS)

test: test-release test-asan

bench: build
	$(BUILD_DIR)/bench/moehub_bench_sim

clean:
	rm -rf $(BUILD_DIR) $(ASAN_DIR)
