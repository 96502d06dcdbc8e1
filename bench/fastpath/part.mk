# bench/fastpath — what the kernel fast path's programs cost per frame
# (BPF_PROG_TEST_RUN); built on demand: `make prog-cost`.
PROG_COST := $(BUILD)/bench/prog-cost

$(BUILD)/obj/bench/fastpath/prog-cost.o: $(BPF_SKEL)
$(BUILD)/obj/bench/fastpath/prog-cost.o: CFLAGS += -I$(BUILD)/gen
$(PROG_COST): $(BUILD)/obj/bench/fastpath/prog-cost.o
	@mkdir -p $(dir $@)
	$(CC) $(filter %.o,$^) -lbpf -lelf -lz $(LDFLAGS) -o $@

prog-cost: $(PROG_COST)
.PHONY: prog-cost
