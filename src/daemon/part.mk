# src/daemon — jakirod, the per-host daemon.
JAKIROD_SRCS := $(wildcard src/daemon/*.c)
JAKIROD_OBJS := $(JAKIROD_SRCS:%.c=$(BUILD)/obj/%.o)
$(BUILD)/bin/jakirod: $(JAKIROD_OBJS) $(CPLANE_LIB) $(CORE_LIB) $(BUILD)/obj/src/util/units.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS)
BINS += $(BUILD)/bin/jakirod
