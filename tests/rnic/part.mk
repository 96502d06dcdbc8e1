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

# libFuzzer targets (make fuzz): built with clang from the sources directly.
RNIC_FUZZ_CFLAGS := -std=c11 -D_GNU_SOURCE -g -O1 -Wall -Wextra -Wno-unused-parameter -Isrc \
                    -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
                    -fno-omit-frame-pointer
RNIC_FUZZ := build-fuzz/fuzz-rnic-rcv build-fuzz/fuzz-rnic-text build-fuzz/fuzz-rnic-exch \
             build-fuzz/fuzz-rnic-cm
fuzz: $(RNIC_FUZZ)

RNIC_FUZZ_SRCS := $(wildcard src/rnic/*.c) $(RNIC_EXTRA_SRCS)
RNIC_FUZZ_DEPS := $(RNIC_FUZZ_SRCS) $(wildcard src/rnic/*.h src/util/*.h src/core/csum.h src/core/wire.h)

build-fuzz/fuzz-rnic-rcv: tests/rnic/fuzz-rnic-rcv.c tests/rnic/roce_frame.h $(RNIC_FUZZ_DEPS)
	@mkdir -p $(dir $@)
	clang $(RNIC_FUZZ_CFLAGS) $< $(RNIC_FUZZ_SRCS) -lpthread -o $@

build-fuzz/fuzz-rnic-text: tests/rnic/fuzz-rnic-text.c src/tools/jk_exch.c $(RNIC_FUZZ_DEPS)
	@mkdir -p $(dir $@)
	clang $(RNIC_FUZZ_CFLAGS) $< src/tools/jk_exch.c $(RNIC_FUZZ_SRCS) -lpthread -o $@

build-fuzz/fuzz-rnic-exch: tests/rnic/fuzz-rnic-exch.c src/tools/jk_exch.c $(wildcard src/tools/*.h src/rnic/*.h)
	@mkdir -p $(dir $@)
	clang $(RNIC_FUZZ_CFLAGS) $< src/tools/jk_exch.c -o $@

build-fuzz/fuzz-rnic-cm: tests/rnic/fuzz-rnic-cm.c src/rnic/cm_mad.c src/rnic/cm_mad.h
	@mkdir -p $(dir $@)
	clang $(RNIC_FUZZ_CFLAGS) $< src/rnic/cm_mad.c -o $@
