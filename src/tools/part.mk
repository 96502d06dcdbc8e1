# src/tools — perftest-style tools over the soft RNIC (jk_write_bw, ...).
JK_TOOLS_LIB  := $(BUILD)/lib/libjktools.a
JK_TOOLS_COMMON := $(patsubst %.c,$(BUILD)/obj/%.o,$(filter-out src/tools/jk_%_bw.c src/tools/jk_%_lat.c src/tools/jk_rc_pingpong.c,$(wildcard src/tools/*.c)))
JK_TOOL_NAMES := $(filter-out jk_cm_lat,$(basename $(notdir $(wildcard src/tools/jk_*_bw.c src/tools/jk_*_lat.c src/tools/jk_rc_pingpong.c))))
JK_TOOLS      := $(addprefix $(BUILD)/bin/,$(JK_TOOL_NAMES))

BINS += $(JK_TOOLS)

$(JK_TOOLS_LIB): $(JK_TOOLS_COMMON)

$(BUILD)/bin/jk_%: $(BUILD)/obj/src/tools/jk_%.o $(JK_TOOLS_LIB) $(BUILD)/lib/librnic.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lm

# jk_cm_lat: RDMA CM set-up, step by step, through the system's librdmacm
# (librdmacm-dev; docs/bench.md).  It runs under jakiro-verbs, whose
# preloaded libjakiro-ucma.so would come before ASan's runtime, so like the
# drop-in it is built without sanitizers whatever SAN says.
JK_CM_LAT := $(BUILD)/bin/jk_cm_lat

BINS += $(JK_CM_LAT)

$(JK_CM_LAT): src/tools/jk_cm_lat.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -g -O2 $(WARN) -o $@ $< -lrdmacm -libverbs
