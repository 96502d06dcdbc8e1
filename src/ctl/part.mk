# src/ctl — jakiroctl, the CLI of the control socket, and of the cluster
# through etcd (cluster.c; it checks policies with jakirod's conf.c).
JAKIROCTL_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard src/ctl/*.c)) $(BUILD)/obj/src/daemon/conf.o
$(BUILD)/bin/jakiroctl: $(JAKIROCTL_OBJS) $(CPLANE_LIB) $(BUILD)/obj/src/util/units.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS)
BINS += $(BUILD)/bin/jakiroctl
