# src/ctl — jakiroctl, the CLI of the control socket.
$(BUILD)/bin/jakiroctl: $(BUILD)/obj/src/ctl/jakiroctl.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS)
BINS += $(BUILD)/bin/jakiroctl
