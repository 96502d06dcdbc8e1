# tests/verbs — the drop-in libibverbs: a cmocka test that links the
# library from the tree (as applications link Debian's).
VERBS_TEST := $(BUILD)/tests/unit/test-verbs
UNIT_TESTS += $(VERBS_TEST)

$(VERBS_TEST): $(BUILD)/obj/tests/verbs/test-verbs.o $(VERBS_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $< $(VERBS_LIB) -Wl,-rpath,$(abspath $(dir $(VERBS_LIB))) -lcmocka

# The RDMA CM's indexes (ucma_index.c) against a model.
UCMA_INDEX_TEST := $(BUILD)/tests/unit/test-ucma-index
UNIT_TESTS += $(UCMA_INDEX_TEST)

$(UCMA_INDEX_TEST): $(BUILD)/obj/tests/verbs/test-ucma-index.o $(BUILD)/obj/src/verbs/ucma_index.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lcmocka

# libFuzzer target (make fuzz): the in-process RDMA CM's state machine fed
# MADs from the wire, its own wire replaced by the harness.
UCMA_FUZZ_SRCS := src/verbs/ucma.c src/verbs/ucma_cm.c src/verbs/ucma_index.c src/rnic/cm_mad.c
fuzz: build-fuzz/fuzz-ucma
build-fuzz/fuzz-ucma: tests/verbs/fuzz-ucma.c $(UCMA_FUZZ_SRCS) $(wildcard src/verbs/*.h src/rnic/*.h)
	@mkdir -p $(dir $@)
	clang $(RNIC_FUZZ_CFLAGS) $< $(UCMA_FUZZ_SRCS) -lpthread -o $@
