#!/usr/bin/env bash
# Hash flooding as a hostile tenant would try it (issue "isolation that
# holds against hostile tenants", item 4): the tenant has read core/hash.h
# and core/nft.c, so it can compute jk_flow_hash (SipHash-1-3 of the flow
# key) under any key it guesses.  It guesses the key an unkeyed build would
# have (0, 0) and crafts 600 UDP port pairs whose NFT home slots all fall in
# 256 of the table's 131,072 slots (flowhash.py).  Under that key the core
# refuses 247 of them at the probe bound and probes ~128 slots for the rest
# (bench/core, test-tables); jakirod draws its key at start (getrandom), so
# here the 600 flows land apart: every one is cached, none refused, and a
# tenant of another VPC on the same host still gets its flows cached.
# datapaths: user (ebpf: floods the NFT, which the kernel fast path has none of; its maps hash with a random seed per map, and hostile.sh floods its RCFT on both)
source "$(dirname "$0")/../lib.sh"
need python3

cat > "$WORK/topo.json" <<'JSON'
{
  "hosts": [ {"name": "h1", "underlay": "172.30.0.1/24"},
             {"name": "h2", "underlay": "172.30.0.2/24"} ],
  "vpcs":  [ {"name": "blue", "vni": 1001, "subnet": "10.0.0.0/24"},
             {"name": "red",  "vni": 1002, "subnet": "10.0.0.0/24"} ],
  "vnics": [ {"name": "a1", "vpc": "blue", "host": "h1", "ip": "10.0.0.1", "nft_reserve": 1000},
             {"name": "a2", "vpc": "blue", "host": "h2", "ip": "10.0.0.2"},
             {"name": "r1", "vpc": "red",  "host": "h1", "ip": "10.0.0.1"},
             {"name": "r2", "vpc": "red",  "host": "h2", "ip": "10.0.0.2"} ]
}
JSON
lab_up "$WORK/topo.json" >/dev/null || { not_ok "lab up"; exit 1; }
HASH="$(dirname "$0")/flowhash.py"

# The NFT of 65,536 entries has 131,072 slots (load <= 3/4): home = hash & 131071.
python3 "$HASH" ports 0 0 1001 10.0.0.1 10.0.0.2 600 256 131071 > "$WORK/ports"
check "600 port pairs crafted against key (0,0), homes in slots 0-255" \
	python3 -c "
import subprocess, sys
pairs = [l.split() for l in open('$WORK/ports')]
assert len(pairs) == 600, len(pairs)
for s, d in pairs[:20]:
    h = int(subprocess.run([sys.executable, '$HASH', 'hash', '0', '0', '1001', '10.0.0.1', '10.0.0.2', s, d],
                           capture_output=True, text=True).stdout)
    assert h & 131071 < 256, (s, d, h)
"
full0=$(stat_of h1 "s['datapath']['nft_full']")
lab exec a1 -- python3 -c "
import socket, time
for i, line in enumerate(open('$WORK/ports')):
    sport, dport = map(int, line.split())
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(('10.0.0.1', sport))
    s.sendto(b'x', ('10.0.0.2', dport))
    s.close()
    if i % 64 == 63:
        time.sleep(0.002)
"
vstat_ge() { test "$(stat_of h1 "s['vnics']['$1']['$2']")" -ge "$3"; }   # VNIC KEY N
check "every crafted flow is cached (600 NFT entries for a1)" wait_until 10 vstat_ge a1 nft_live 600
check "none refused at the probe bound (nft_full unchanged)" \
	test "$(stat_of h1 "s['datapath']['nft_full']")" -eq "$full0"
check "none past a1's reserve" test "$(stat_of h1 "s['vnics']['a1']['nft_over_reserve']")" -eq 0

lab exec r1 -- python3 -c "
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for p in range(30000, 30100):
    s.sendto(b'x', ('10.0.0.2', p))
"
check "a tenant of another VPC on the host gets its 100 new flows cached" wait_until 10 vstat_ge r1 nft_live 100
check "and reaches its peer" lab exec r1 -- ping -c 2 -i 0.2 -W 2 10.0.0.2
exit $FAILED
