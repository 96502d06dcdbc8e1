# src/core — the datapath core library (no I/O, no clock, no allocation per packet).
CORE_SRCS := $(wildcard src/core/*.c)
CORE_LIB  := $(BUILD)/lib/libjkcore.a
$(CORE_LIB): $(CORE_SRCS:%.c=$(BUILD)/obj/%.o)
LIBS += $(CORE_LIB)
all: $(CORE_LIB)
