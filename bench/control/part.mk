# bench/control — the cluster control plane's propagation benchmark
# (bench/control/run); cp-sim, its synthetic watchers and publishers, is
# built on demand, not by `make all`.
CP_SIM := $(BUILD)/bench/cp-sim

$(CP_SIM): $(BUILD)/obj/bench/control/cp-sim.o $(CPLANE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(filter %.o,$^) $(CPLANE_LIB) $(LDFLAGS) $(PKG_LIBS) -lpthread -o $@

cp-sim: $(CP_SIM)
.PHONY: cp-sim
