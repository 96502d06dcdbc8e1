# src/rnic — the soft RNIC library (librnic.a).
RNIC_SRCS := $(wildcard src/rnic/*.c)
RNIC_OBJS := $(RNIC_SRCS:%.c=$(BUILD)/obj/%.o)
RNIC_LIB  := $(BUILD)/lib/librnic.a

LIBS += $(RNIC_LIB)
all: $(RNIC_LIB)

$(RNIC_LIB): $(RNIC_OBJS) $(BUILD)/obj/src/util/units.o
