# src/tools — perftest-style tools over the soft RNIC (jk_write_bw, ...).
JK_TOOLS_LIB  := $(BUILD)/lib/libjktools.a
JK_TOOLS_COMMON := $(patsubst %.c,$(BUILD)/obj/%.o,$(filter-out src/tools/jk_%_bw.c src/tools/jk_%_lat.c src/tools/jk_rc_pingpong.c,$(wildcard src/tools/*.c)))
JK_TOOL_NAMES := $(basename $(notdir $(wildcard src/tools/jk_*_bw.c src/tools/jk_*_lat.c src/tools/jk_rc_pingpong.c)))
JK_TOOLS      := $(addprefix $(BUILD)/bin/,$(JK_TOOL_NAMES))

BINS += $(JK_TOOLS)

$(JK_TOOLS_LIB): $(JK_TOOLS_COMMON)

$(BUILD)/bin/jk_%: $(BUILD)/obj/src/tools/jk_%.o $(JK_TOOLS_LIB) $(BUILD)/lib/librnic.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lm
