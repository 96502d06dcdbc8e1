/* fuzz-parse.c — libFuzzer target: the input as an Ethernet frame
 * (jk_parse_frame) and as an underlay IPv4 packet (jk_parse_outer).
 * Any input must give a defined reason, and an accepted one offsets
 * inside it. */
#include <stddef.h>
#include <stdint.h>

#include "core/parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jk_pkt_meta m;
	struct jk_outer o;
	enum jk_drop why;

	if (size > JK_PKT_DATA_MAX)
		return -1;
	why = jk_parse_frame(data, (uint32_t)size, &m);
	if (why >= JK_DROP__COUNT)
		__builtin_trap();
	if (why == JK_DROP_NONE) {
		if (m.l3_ofs > size || m.l4_ofs > size || m.l5_ofs > size || m.cls >= JK_CLASS__COUNT)
			__builtin_trap();
		if ((m.flags & JK_PF_IPV4) && m.l3_ofs + m.ip_tot_len > size)
			__builtin_trap();
	}
	why = jk_parse_outer(data, (uint32_t)size, &o);
	if (why != JK_DROP_NONE && why != JK_DROP_UNDERLAY_TRUNC)
		__builtin_trap();
	if (why == JK_DROP_NONE && o.vxlan_ofs > size)
		__builtin_trap();
	return 0;
}
