# src/util — small pieces every part shares: the units parser (units.h).
# Its object goes into the programs and libraries that use it by path (this
# fragment is read after theirs).
UTIL_OBJS := $(BUILD)/obj/src/util/units.o
