/* hash.c — the key of the keyed hash (hash.h). */
#include "core/hash.h"

uint64_t jk_hash_key[2];

void jk_hash_set_key(uint64_t k0, uint64_t k1)
{
	jk_hash_key[0] = k0;
	jk_hash_key[1] = k1;
}
