/* units.h — the one parser of rates, sizes and times that users type, for
 * the daemon's configuration, jakiroctl requests, the soft RNIC's DCQCN
 * parameters and the perftest-style tools alike.
 *
 *   rate  bit/s:  "123", "100kbit", "500mbit", "1.5gbit"; k, m, g alone are
 *                 kbit, mbit, gbit ("40m" = 40 Mbit/s); decimal multiples
 *   size  bytes:  "1500", "64k", "1m", "2g" (also kb, mb, gb, b);
 *                 binary multiples (1k = 1024)
 *   time  ns:     "300" or "300ns", "55us", "1ms", "2s"
 *
 * Suffixes are case-insensitive.  Strict: no sign, no space, no trailing
 * garbage, no overflow (results must fit in 2^62); a fraction is rounded
 * to the nearest unit.  0 on success, -EINVAL otherwise (*out untouched).
 * Pure functions; thread-safe.
 */
#ifndef JK_UNITS_H
#define JK_UNITS_H

#include <stdint.h>

int jk_units_rate(const char *s, uint64_t *bps);
int jk_units_size(const char *s, uint64_t *bytes);
int jk_units_time(const char *s, uint64_t *ns);

#endif
