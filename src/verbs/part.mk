# src/verbs — the drop-in libibverbs.so.1 over the soft RNIC, and its
# launcher jakiro-verbs.  Built without sanitizers whatever SAN says: it is
# loaded into uninstrumented programs (Debian's perftest, ibverbs-utils).
VERBS_SRCS   := $(wildcard src/verbs/*.c) $(RNIC_SRCS) $(RNIC_EXTRA_SRCS)
VERBS_OBJS   := $(VERBS_SRCS:%.c=$(BUILD)/obj-pic/%.o)
VERBS_LIB    := $(BUILD)/lib/verbs/libibverbs.so.1
VERBS_CFLAGS := -std=c11 -D_GNU_SOURCE -g -O2 $(WARN) -Isrc -MMD -MP -fPIC -fvisibility=hidden

# libjakiro-ucma.so: preloaded by jakiro-verbs, it answers librdmacm's
# open("/dev/infiniband/rdma_cm") with the drop-in's in-process RDMA CM.
UCMA_PRELOAD := $(BUILD)/lib/verbs/libjakiro-ucma.so

BINS += $(VERBS_LIB) $(UCMA_PRELOAD) $(BUILD)/bin/jakiro-verbs

$(UCMA_PRELOAD): src/verbs/preload/ucma_preload.c src/verbs/ucma_abi.h
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -MMD -MP,$(VERBS_CFLAGS)) -shared -o $@ $< -Wl,-z,defs -ldl

$(BUILD)/obj-pic/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(VERBS_CFLAGS) -c $< -o $@

$(VERBS_LIB): $(VERBS_OBJS) src/verbs/libibverbs.map
	@mkdir -p $(dir $@)
	$(CC) -shared -o $@ $(VERBS_OBJS) -Wl,-soname,libibverbs.so.1 \
		-Wl,--version-script=src/verbs/libibverbs.map -Wl,-z,defs -Wl,-z,now -lpthread

$(BUILD)/bin/jakiro-verbs: src/verbs/jakiro-verbs
	@mkdir -p $(dir $@)
	cp $< $@
	chmod +x $@
