# src/bpf — the kernel fast path's programs (clang -target bpf), compiled
# with the pipeline's headers (src/pipeline/), and the skeleton jakirod
# loads them through (bpftool gen skeleton).  docs/fastpath.md.
# The compiler's dependency file (-MMD) names every header the object
# includes: a change to any of them rebuilds it.
BPF_CLANG  ?= clang
BPF_CFLAGS := -O2 -g -target bpf -mcpu=v3 -ffreestanding -Wall -Werror -Isrc -MMD -MP \
              -I/usr/include/$(shell $(CC) -dumpmachine)
BPF_OBJ    := $(BUILD)/bpf/jakiro.bpf.o
BPF_SKEL   := $(BUILD)/gen/jakiro.skel.h

$(BPF_OBJ): src/bpf/jakiro.bpf.c
	@mkdir -p $(dir $@)
	$(BPF_CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BPF_SKEL): $(BPF_OBJ)
	@mkdir -p $(dir $@)
	bpftool gen skeleton $< name jakiro_bpf > $@.tmp && mv $@.tmp $@

# jakirod's loader includes the skeleton (the programs' bytes are in it).
$(BUILD)/obj/src/daemon/dpif_ebpf.o: $(BPF_SKEL)
$(BUILD)/obj/src/daemon/dpif_ebpf.o: CFLAGS += -I$(BUILD)/gen
all: $(BPF_OBJ)
