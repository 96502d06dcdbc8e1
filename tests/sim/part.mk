# tests/sim — closed-loop simulations of real code (rdma_loop: the soft
# RNIC's DCQCN against the vNIC's DHTB).  test-rdma-loop is a unit test;
# loop-cli prints the same loop over a grid of rates for exploration.
SIM_OBJ    := $(BUILD)/obj/tests/sim/rdma_loop.o
SIM_TEST   := $(BUILD)/tests/unit/test-rdma-loop
SIM_CLI    := $(BUILD)/tests/sim/loop-cli

UNIT_TESTS += $(SIM_TEST)
unit-bins: $(SIM_CLI)

$(SIM_TEST): $(BUILD)/obj/tests/sim/test-rdma-loop.o $(SIM_OBJ) $(CORE_LIB) $(RNIC_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lcmocka

$(SIM_CLI): $(BUILD)/obj/tests/sim/loop-cli.o $(SIM_OBJ) $(CORE_LIB) $(RNIC_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^
