/* fuzz-fastpath.c — libFuzzer target: core against the kernel fast path's
 * programs (BPF_PROG_TEST_RUN) with any bytes as the frame, through the
 * harness of tests/unit/test-fastpath.c (the same tables on both sides).
 * The input goes out of every vNIC of that host (jk_dp_egress against
 * jk_from_vnic), plain and with each context below (a segmentation request
 * of each kind from a container and from a VM, with a segment size the
 * input's last byte picks; an 802.1Q tag), and in from the underlay from
 * every source below
 * (jk_dp_ingress against jk_from_underlay): trying each vNIC rather than
 * taking one from a selector byte keeps run-fuzz's seeds (bare frames,
 * mkseeds egress) frames.  Any difference of way out, drop reason, bytes
 * out or counters aborts, naming it.  Needs root; a kernel that refuses
 * the programs aborts too, with the verifier's words. */
#define TWIN_HARNESS_ONLY
#include "test-fastpath.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Where an underlay packet comes from: served or not, located or not. */
static const struct {
	uint32_t vni, vtep;
} SOURCES[] = {
	{ VNI_1, VTEP_2 }, { VNI_1, VTEP_3 }, { VNI_2, VTEP_2 }, { VNI_2, VTEP_4 }, { VNI_3, VTEP_2 }, { VNI_1, VTEP_9 },
};

/* The kernel's contexts a frame is tried with besides none. */
static const struct twin_ctx CONTEXTS[] = {
	{ .gso = TWIN_GSO_TCPV4 },             { .gso = TWIN_GSO_TCPV4, .vm = true },
	{ .gso = TWIN_GSO_UDP_L4 },            { .gso = TWIN_GSO_UDP_L4, .vm = true },
	{ .gso = TWIN_GSO_UFO, .vm = true },   { .vlan_tci = 7 },
};

static void differ(const char *what, size_t size, const char *why)
{
	fprintf(stderr, "fuzz-fastpath: core and the program differ on a %zu-byte frame %s: %s\n", size, what, why);
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct twin *t;
	static char err[8192];
	char what[64];

	if (!t) {
		t = twin_open(err, sizeof(err));
		if (!t) {
			fprintf(stderr, "fuzz-fastpath: %s\n", err);
			abort();
		}
	}
	if (size > TWIN_FRAME_MAX)          /* past what a test run takes */
		return -1;
	for (int i = 0; i < TW_LOCALS; i++)
		if (twin_egress(t, i, data, (uint32_t)size) == TWIN_DIFFER) {
			snprintf(what, sizeof(what), "from vNIC %s", LOCALS[i].name);
			differ(what, size, t->why);
		}
	for (size_t c = 0; c < sizeof(CONTEXTS) / sizeof(CONTEXTS[0]) && size >= 1; c++) {
		static uint8_t frame[TWIN_FRAME_MAX];
		struct twin_ctx x = CONTEXTS[c];

		memcpy(frame, data, size);
		if (x.gso != TWIN_GSO_NONE) {
			/* Segments of 1 to 256 bytes, or 1400; the last byte picks. */
			x.gso_size = data[size - 1] ? data[size - 1] : 1400;
			as_super_frame(frame, (uint32_t)size);
		}
		for (int i = 0; i < TW_LOCALS; i++)
			if (twin_egress_ctx(t, i, frame, (uint32_t)size, &x) == TWIN_DIFFER) {
				snprintf(what, sizeof(what), "from vNIC %s, context %zu", LOCALS[i].name, c);
				differ(what, size, t->why);
			}
	}
	for (size_t i = 0; i < sizeof(SOURCES) / sizeof(SOURCES[0]); i++)
		if (twin_ingress(t, SOURCES[i].vni, SOURCES[i].vtep, data, (uint32_t)size) == TWIN_DIFFER) {
			snprintf(what, sizeof(what), "in VNI %u from VTEP %08x", SOURCES[i].vni, SOURCES[i].vtep);
			differ(what, size, t->why);
		}
	return 0;
}
