# tests/fuzz — libFuzzer targets, built with clang into build-fuzz/ from the
# core sources directly (own instrumentation; no $(BUILD) objects).
# `make fuzz` builds them; tests/fuzz/run-fuzz [SECONDS] builds and runs them.
FUZZ_DIR     := build-fuzz
FUZZ_CC      ?= clang
FUZZ_CFLAGS  := -std=c11 -D_GNU_SOURCE -g -O1 -Wall -Wextra -Wno-unused-parameter -Isrc -Itests/unit \
                -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_TARGETS := $(patsubst tests/fuzz/fuzz-%.c,$(FUZZ_DIR)/fuzz-%,$(wildcard tests/fuzz/fuzz-*.c))

fuzz: $(FUZZ_TARGETS) $(FUZZ_DIR)/mkseeds

$(FUZZ_DIR)/fuzz-%: tests/fuzz/fuzz-%.c tests/fuzz/fuzz-env.h $(CORE_SRCS) $(wildcard src/core/*.h src/pipeline/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $< $(CORE_SRCS) -o $@

# fuzz-vnet and fuzz-egress also send what the core gives the underlay as
# jakirod does (daemon/underlay.c), the socket calls wrapped by the harness
# (fuzz-underlay.h).
FUZZ_UNDERLAY := $(FUZZ_DIR)/fuzz-vnet $(FUZZ_DIR)/fuzz-egress
$(FUZZ_UNDERLAY): $(FUZZ_DIR)/fuzz-%: tests/fuzz/fuzz-%.c tests/fuzz/fuzz-env.h tests/fuzz/fuzz-underlay.h src/daemon/underlay.c $(CORE_SRCS) $(wildcard src/core/*.h src/pipeline/*.h src/daemon/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $< src/daemon/underlay.c $(CORE_SRCS) -Wl,--wrap=sendmsg,--wrap=sendmmsg -o $@

# The configuration parsers: jakirod's conf.c and the units parser, with jansson.
# (conf.c reads the etcd password file through src/cplane: linked whole.)
$(FUZZ_DIR)/fuzz-conf: tests/fuzz/fuzz-conf.c src/daemon/conf.c src/util/units.c $(wildcard src/cplane/*.c) $(wildcard src/daemon/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) tests/fuzz/fuzz-conf.c src/daemon/conf.c src/util/units.c $(wildcard src/cplane/*.c) $(CORE_SRCS) -ljansson -lcurl -o $@

# The control-socket request handler: ctl.c, apply.c and conf.c over the
# core and the datapath interface (dpif.c), with the datapath a stub
# provider and netlink stubbed in the harness.
FUZZ_CTL_SRCS := src/daemon/ctl.c src/daemon/apply.c src/daemon/dpif.c src/daemon/conf.c src/util/units.c $(wildcard src/cplane/*.c)
$(FUZZ_DIR)/fuzz-ctl: tests/fuzz/fuzz-ctl.c $(FUZZ_CTL_SRCS) $(CORE_SRCS) $(wildcard src/daemon/*.h src/core/*.h src/pipeline/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) tests/fuzz/fuzz-ctl.c $(FUZZ_CTL_SRCS) $(CORE_SRCS) -ljansson -lcurl -lpthread -o $@

# jakirod's /metrics text builder (pure: no libmicrohttpd).
$(FUZZ_DIR)/fuzz-metrics: tests/fuzz/fuzz-metrics.c src/daemon/metrics_text.c $(CORE_SRCS) $(wildcard src/daemon/*.h src/core/*.h src/pipeline/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) tests/fuzz/fuzz-metrics.c src/daemon/metrics_text.c $(CORE_SRCS) -o $@

$(FUZZ_DIR)/mkseeds: tests/fuzz/mkseeds.c tests/unit/frames.c tests/unit/frames.h
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -g -O1 -Wall -Wextra -Werror -Itests/unit tests/fuzz/mkseeds.c tests/unit/frames.c -o $@

# What jakirod reads from etcd: the watch stream, keys, values, base64.
CPLANE_SRCS := $(wildcard src/cplane/*.c)
$(FUZZ_DIR)/fuzz-cplane: tests/fuzz/fuzz-cplane.c $(CPLANE_SRCS) $(wildcard src/cplane/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) tests/fuzz/fuzz-cplane.c $(CPLANE_SRCS) -ljansson -lcurl -o $@

# jakiro-cni's stdin and IPAM-result parsers (src/cni without its I/O).
FUZZ_CNI_SRCS := src/cni/conf.c src/cni/result.c src/cni/name.c src/daemon/conf.c src/util/units.c $(wildcard src/cplane/*.c)
$(FUZZ_DIR)/fuzz-cni: tests/fuzz/fuzz-cni.c $(FUZZ_CNI_SRCS) src/cni/cni.h src/daemon/conf.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) tests/fuzz/fuzz-cni.c $(FUZZ_CNI_SRCS) -ljansson -lcurl -o $@

# The kernel fast path against core, through test-fastpath.c's harness
# (included by the target): the programs' skeleton, made here by
# src/bpf/part.mk under $(BUILD)/gen (run-fuzz: build-fuzz/make/gen), and
# libbpf; run as root.
$(FUZZ_DIR)/fuzz-fastpath: tests/fuzz/fuzz-fastpath.c tests/unit/test-fastpath.c tests/unit/dp_host.c tests/unit/dp_host.h tests/unit/frames.h $(BPF_SKEL) $(CORE_SRCS) $(wildcard src/core/*.h src/bpf/*.h src/pipeline/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -I$(BUILD)/gen tests/fuzz/fuzz-fastpath.c tests/unit/dp_host.c $(CORE_SRCS) -lbpf -lelf -lz -o $@
