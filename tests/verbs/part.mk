# tests/verbs — the drop-in libibverbs: a cmocka test that links the
# library from the tree (as applications link Debian's).
VERBS_TEST := $(BUILD)/tests/unit/test-verbs
UNIT_TESTS += $(VERBS_TEST)

$(VERBS_TEST): $(BUILD)/obj/tests/verbs/test-verbs.o $(VERBS_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $< $(VERBS_LIB) -Wl,-rpath,$(abspath $(dir $(VERBS_LIB))) -lcmocka
