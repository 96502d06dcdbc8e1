/* fuzz-rnic-text — libFuzzer target for what the soft RNIC and its tools
 * read from users and peers as text: the perftest and ibv_rc_pingpong key
 * messages (TCP), DCQCN parameters and the fault-hook spec.  The first
 * byte picks the parser. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rnic/rnic.h"
#include "rnic/rnic_loc.h"
#include "tools/jk_exch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char buf[512];
	struct jk_dest d;

	if (size < 1)
		return 0;
	switch (data[0] % 4) {
	case 0: {
		char msg[JK_PT_MSG_GID];
		char out[JK_PT_MSG_GID];

		memset(msg, 0, sizeof(msg));
		memcpy(msg, data + 1, size - 1 < sizeof(msg) ? size - 1 : sizeof(msg));
		if (!jk_pt_parse(msg, &d))
			jk_pt_format(&d, out);
		break;
	}
	case 1: {
		char msg[JK_PP_MSG];
		char out[JK_PP_MSG];

		memset(msg, 0, sizeof(msg));
		memcpy(msg, data + 1, size - 1 < sizeof(msg) ? size - 1 : sizeof(msg));
		if (!jk_pp_parse(msg, &d))
			jk_pp_format(&d, out);
		break;
	}
	case 2: {
		struct rnic_dcqcn_params p;
		size_t n = size - 1 < sizeof(buf) - 1 ? size - 1 : sizeof(buf) - 1;

		memcpy(buf, data + 1, n);
		buf[n] = 0;
		rnic_dcqcn_defaults(&p);
		rnic_dcqcn_parse(&p, buf);
		break;
	}
	default: {
		struct rnic_fault *f;
		size_t n = size - 1 < sizeof(buf) - 1 ? size - 1 : sizeof(buf) - 1;

		memcpy(buf, data + 1, n);
		buf[n] = 0;
		if (!rnic_fault_open(buf, &f))
			rnic_fault_close(f);
		break;
	}
	}
	return 0;
}
