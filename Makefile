# Jakiro — top-level build.
#
#   make            release build into build/
#   make SAN=1      ASan + UBSan build into build-san/ (what the tests use)
#   make test       builds with SAN=1 and runs every test (tests/run)
#   make unit       unit tests only
#   make fuzz       libFuzzer targets (clang) into build-fuzz/
#   make demo       the two-host, two-VPC demo (installs what is missing)
#
# Each part of the tree adds itself through a fragment (src/*/part.mk,
# tests/*/part.mk) that appends to LIBS / BINS / UNIT_TESTS.

CC      ?= gcc
SAN     ?= 0
ifeq ($(SAN),1)
BUILD   ?= build-san
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
OPT     := -O1
else
BUILD   ?= build
SANFLAGS :=
OPT     := -O2
endif

WARN    := -Wall -Wextra -Werror -Wmissing-prototypes -Wstrict-prototypes \
           -Wold-style-definition -Wformat=2 -Wshadow -Wpointer-arith \
           -Wno-unused-parameter
CFLAGS  ?=
CFLAGS  += -std=c11 -D_GNU_SOURCE -g $(OPT) $(WARN) $(SANFLAGS) -Isrc -MMD -MP
LDFLAGS += $(SANFLAGS)

PKG_CFLAGS := $(shell pkg-config --cflags jansson libmnl libcurl 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs jansson libmnl libcurl 2>/dev/null)

LIBS       :=
BINS       :=
UNIT_TESTS :=

all:

include $(wildcard src/*/part.mk) $(wildcard tests/*/part.mk) $(wildcard bench/*/part.mk)

all: $(BINS)

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -c $< -o $@

$(BUILD)/lib/%.a:
	@mkdir -p $(dir $@)
	ar rcs $@ $^

unit: $(UNIT_TESTS)
	@tests/unit/run $(UNIT_TESTS)

test:
	scripts/install-deps --test
	$(MAKE) SAN=1 all unit-bins
	tests/run

unit-bins: $(UNIT_TESTS)

demo:
	./demo/run

clean:
	rm -rf build build-san build-fuzz

.PHONY: all unit unit-bins test demo clean fuzz

-include $(shell find $(BUILD) -type f -name '*.d' 2>/dev/null)
