/* fuzz-rnic-cm — libFuzzer target for the CM MAD codec (src/rnic/cm_mad.c).
 *
 * Each input is parsed as a MAD, as an IP CM header and (its first 8
 * bytes) as a service ID.  Whatever parses must build again, and the built
 * bytes must parse back to the same struct and build to the same bytes; a
 * refusal must name a reason.  Any difference aborts.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rnic/cm_mad.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_mad(const uint8_t *data, size_t size)
{
	struct cm_msg a, b;
	uint8_t mad[CM_MAD_LEN], again[CM_MAD_LEN];
	enum cm_mad_error why = CM_MAD_ERR_COUNT;
	int rc = cm_mad_parse(data, size, &a, &why);

	if (rc) {
		if (rc >= 0 || why == CM_MAD_OK || why >= CM_MAD_ERR_COUNT)
			abort();
		return;
	}
	if (why != CM_MAD_OK)
		abort();
	if (cm_mad_build(&a, mad))
		abort();
	if (cm_mad_parse(mad, sizeof(mad), &b, &why) || why != CM_MAD_OK)
		abort();
	if (memcmp(&a, &b, sizeof(a)))
		abort();
	if (cm_mad_build(&b, again) || memcmp(mad, again, sizeof(mad)))
		abort();
}

static void check_cma_hdr(const uint8_t *data, size_t size)
{
	struct cm_cma_hdr a, b;
	uint8_t out[CM_CMA_HDR_LEN];

	if (cm_cma_hdr_parse(data, size, &a))
		return;
	if (cm_cma_hdr_build(&a, out) || cm_cma_hdr_parse(out, sizeof(out), &b))
		abort();
	if (memcmp(&a, &b, sizeof(a)))
		abort();
}

static void check_service_id(const uint8_t *data, size_t size)
{
	uint64_t sid = 0;
	uint16_t ps, port;

	if (size < sizeof(sid))
		return;
	memcpy(&sid, data, sizeof(sid));
	if (cm_service_id_split(sid, &ps, &port) == 0 && cm_service_id(ps, port) != sid)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_mad(data, size);
	check_cma_hdr(data, size);
	check_service_id(data, size);
	return 0;
}
