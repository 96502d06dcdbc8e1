/* parse.c — core's entry points to the frame parser of both datapaths
 * (pipeline/parse.h). */
#include "core/parse.h"

#include <string.h>

#include "core/wire.h"
#include "pipeline/parse.h"

enum jk_drop jk_parse_frame(const uint8_t *frame, uint32_t len, struct jk_pkt_meta *m)
{
	struct jk_cursor c = jk_cursor_of(frame, len);

	return jk_frame_parse(&c, m);
}

enum jk_drop jk_parse_outer(const uint8_t *pkt, uint32_t len, struct jk_outer *o)
{
	struct jk_cursor c = jk_cursor_of(pkt, len);
	struct jk_pkt_meta m;

	memset(&m, 0, sizeof(m));
	if (jk_frame_ipv4(&c, 0, len, &m) != JK_DROP_NONE || (m.flags & JK_PF_FRAG) || !(m.flags & JK_PF_UDP))
		return JK_DROP_UNDERLAY_TRUNC;
	o->src_ip = m.src_ip;
	o->dst_ip = m.dst_ip;
	o->tos = m.tos;
	o->sport = m.sport;
	o->dport = m.dport;
	o->vxlan_ofs = m.l5_ofs;
	return JK_DROP_NONE;
}
