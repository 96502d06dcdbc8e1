# src/rnic — the soft RNIC library (librnic.a).
RNIC_SRCS := $(wildcard src/rnic/*.c)
# what it takes from the rest of the tree, standalone files: the units
# parser and the Internet checksum
RNIC_EXTRA_SRCS := src/util/units.c src/core/csum.c
RNIC_OBJS := $(RNIC_SRCS:%.c=$(BUILD)/obj/%.o)
RNIC_LIB  := $(BUILD)/lib/librnic.a

LIBS += $(RNIC_LIB)
all: $(RNIC_LIB)

$(RNIC_LIB): $(RNIC_OBJS) $(RNIC_EXTRA_SRCS:%.c=$(BUILD)/obj/%.o)
