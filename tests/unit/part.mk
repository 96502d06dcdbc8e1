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
