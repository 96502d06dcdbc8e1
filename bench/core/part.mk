# bench/core — the in-memory core benchmark (bench/core/run); built on
# demand, not by `make all`.
CORE_BENCH := $(BUILD)/bench/core-bench

$(CORE_BENCH): $(BUILD)/obj/bench/core/core-bench.o $(BUILD)/obj/tests/unit/frames.o $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(filter %.o,$^) $(CORE_LIB) $(LDFLAGS) -o $@

$(BUILD)/obj/bench/core/core-bench.o: CFLAGS += -Itests/unit

core-bench: $(CORE_BENCH)
.PHONY: core-bench
