/* name.c — a container's vNIC name, TAP name and MAC, derived from its
 * container ID and interface name alone: ADD, CHECK and DEL agree without
 * keeping state, and two interfaces of one container differ.
 *
 * FNV-1a (64 bits) over "CONTAINERID/IFNAME", then a second round over the
 * first's digest for the MAC's bits.  A collision between two containers
 * of one host (16 hex digits of name) is refused by jakirod ("a vNIC
 * exists"), never silently shared. */
#include "cni/cni.h"

#include <stdio.h>
#include <string.h>

#define FNV64_OFFSET 0xcbf29ce484222325ull
#define FNV64_PRIME  0x100000001b3ull

static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= FNV64_PRIME;
	}
	return h;
}

void cni_names_derive(const char *container_id, const char *ifname, struct cni_names *n)
{
	uint64_t h = fnv1a(FNV64_OFFSET, container_id, strlen(container_id));
	uint64_t m;

	memset(n, 0, sizeof(*n));
	h = fnv1a(h, "/", 1);
	h = fnv1a(h, ifname, strlen(ifname));
	m = fnv1a(FNV64_OFFSET, &h, sizeof(h));
	snprintf(n->vnic, sizeof(n->vnic), "cni-%016llx", (unsigned long long)h);
	snprintf(n->tap, sizeof(n->tap), "jc%012llx", (unsigned long long)(h >> 16));
	n->mac[0] = 0x02;                   /* locally administered, unicast */
	for (int i = 1; i < 6; i++)
		n->mac[i] = (uint8_t)(m >> (8 * (i - 1)));
}
