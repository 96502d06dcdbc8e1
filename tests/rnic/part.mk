# tests/rnic — soft RNIC: cmocka unit tests and the helper the scripts use.
RNIC_UNIT_SRCS := $(wildcard tests/rnic/test-rnic-*.c)
RNIC_UNIT      := $(patsubst tests/rnic/%.c,$(BUILD)/tests/unit/%,$(RNIC_UNIT_SRCS))
RNIC_XFER      := $(BUILD)/tests/rnic/rnic_xfer

UNIT_TESTS += $(RNIC_UNIT)
all: $(RNIC_XFER)
unit-bins: $(RNIC_XFER)

$(BUILD)/tests/unit/test-rnic-%: $(BUILD)/obj/tests/rnic/test-rnic-%.o $(RNIC_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lcmocka

$(RNIC_XFER): $(BUILD)/obj/tests/rnic/rnic_xfer.o $(JK_TOOLS_LIB) $(RNIC_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^
