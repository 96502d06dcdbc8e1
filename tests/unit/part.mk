# tests/unit — one cmocka binary per core module, built with the tree's
# flags and linked with the core library.  `make SAN=1 unit-bins` builds
# them, `tests/run unit` runs them.
UNIT_NAMES   := $(patsubst tests/unit/test-%.c,%,$(wildcard tests/unit/test-*.c))
UNIT_HELPERS := $(BUILD)/obj/tests/unit/frames.o $(BUILD)/obj/tests/unit/dp_host.o
UNIT_TESTS   += $(UNIT_NAMES:%=$(BUILD)/tests/unit/test-%)

$(BUILD)/tests/unit/test-%: $(BUILD)/obj/tests/unit/test-%.o $(UNIT_HELPERS) $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(filter %.o,$^) $(CORE_LIB) -lcmocka $(LDFLAGS) -o $@

# Keep the objects (pattern-rule intermediates) so relinking stays cheap.
.SECONDARY: $(UNIT_HELPERS) $(UNIT_NAMES:%=$(BUILD)/obj/tests/unit/test-%.o)

# test-units also needs the units parser (src/util).
$(BUILD)/tests/unit/test-units: $(BUILD)/obj/src/util/units.o

# test-metrics: the exposition text builder of jakirod's /metrics (pure, no libmicrohttpd).
$(BUILD)/tests/unit/test-metrics: $(BUILD)/obj/src/daemon/metrics_text.o

# test-cplane: the etcd client's framing, keys and values, and the "etcd"
# section of conf.c (with the units parser it uses).
$(BUILD)/tests/unit/test-cplane: $(BUILD)/obj/tests/unit/test-cplane.o $(BUILD)/obj/src/daemon/conf.o $(BUILD)/obj/src/util/units.o $(CPLANE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(filter %.o,$^) $(CPLANE_LIB) $(CORE_LIB) -lcmocka $(PKG_LIBS) $(LDFLAGS) -o $@

# test-fastpath: the kernel fast path's programs against core, frame by
# frame (libbpf and the programs' skeleton; BPF_PROG_TEST_RUN needs root).
$(BUILD)/obj/tests/unit/test-fastpath.o: $(BPF_SKEL)
$(BUILD)/obj/tests/unit/test-fastpath.o: CFLAGS += -I$(BUILD)/gen
$(BUILD)/tests/unit/test-fastpath: $(BUILD)/obj/tests/unit/test-fastpath.o $(UNIT_HELPERS) $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(filter %.o,$^) $(CORE_LIB) -lcmocka -lbpf -lelf -lz $(LDFLAGS) -o $@

# test-underlay: the daemon's underlay send path, its socket calls wrapped
# by the test (no socket is used).
$(BUILD)/tests/unit/test-underlay: $(BUILD)/obj/tests/unit/test-underlay.o $(UNIT_HELPERS) $(BUILD)/obj/src/daemon/underlay.o $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(filter %.o,$^) $(CORE_LIB) -lcmocka -Wl,--wrap=sendmsg,--wrap=sendmmsg $(LDFLAGS) -o $@
