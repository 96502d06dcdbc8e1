# src/cni — jakiro-cni, the CNI plugin (docs/cni.md).  Everything but
# main.o goes into CNI_OBJS for the unit tests too.  jakirod's conf.o (with
# the units parser, and the key checks of src/cplane) checks the vNIC keys and formats addresses, as for the
# daemon itself.
CNI_SRCS := $(filter-out src/cni/main.c,$(wildcard src/cni/*.c))
CNI_OBJS := $(CNI_SRCS:%.c=$(BUILD)/obj/%.o)
$(BUILD)/bin/jakiro-cni: $(BUILD)/obj/src/cni/main.o $(CNI_OBJS) $(BUILD)/obj/src/daemon/conf.o $(BUILD)/obj/src/daemon/nl.o $(BUILD)/obj/src/util/units.o $(BUILD)/lib/libjkcplane.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS)
BINS += $(BUILD)/bin/jakiro-cni

# test-cni links the plugin's objects (not main) and jansson.  (src/cplane/part.mk is read
# after this fragment: its library by path.)
$(BUILD)/tests/unit/test-cni: $(BUILD)/obj/tests/unit/test-cni.o $(CNI_OBJS) $(BUILD)/obj/src/daemon/conf.o $(BUILD)/obj/src/daemon/nl.o $(BUILD)/obj/src/util/units.o $(BUILD)/lib/libjkcplane.a
	@mkdir -p $(dir $@)
	$(CC) $(filter %.o,$^) $(BUILD)/lib/libjkcplane.a -lcmocka $(LDFLAGS) $(PKG_LIBS) -o $@
