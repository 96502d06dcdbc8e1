# src/daemon — jakirod, the per-host daemon.
# The /metrics server (metrics.c) uses libmicrohttpd.
MHD_CFLAGS := $(shell pkg-config --cflags libmicrohttpd 2>/dev/null)
MHD_LIBS   := $(shell pkg-config --libs libmicrohttpd 2>/dev/null || echo -lmicrohttpd)
$(BUILD)/obj/src/daemon/metrics.o: CFLAGS += $(MHD_CFLAGS)
JAKIROD_SRCS := $(wildcard src/daemon/*.c)
JAKIROD_OBJS := $(JAKIROD_SRCS:%.c=$(BUILD)/obj/%.o)
$(BUILD)/bin/jakirod: $(JAKIROD_OBJS) $(CPLANE_LIB) $(CORE_LIB) $(BUILD)/obj/src/util/units.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS) $(MHD_LIBS) -lbpf -lelf -lz
BINS += $(BUILD)/bin/jakirod
