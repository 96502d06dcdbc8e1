# src/cplane — the cluster control plane's pieces shared by jakirod and
# jakiroctl: an etcd v3 client (JSON gateway over libcurl), base64 and the
# key layout.
CPLANE_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard src/cplane/*.c))
CPLANE_LIB  := $(BUILD)/lib/libjkcplane.a
$(CPLANE_LIB): $(CPLANE_OBJS)
LIBS += $(CPLANE_LIB)
all: $(CPLANE_LIB)
