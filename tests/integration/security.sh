#!/usr/bin/env bash
# Anti-spoofing on egress and the underlay checks on ingress: each bad
# packet is dropped and counted under its reason.
# datapaths: user ebpf
source "$(dirname "$0")/../lib.sh"
need ping python3

cat > "$WORK/topo.json" <<'JSON'
{
  "hosts": [ {"name": "h1", "underlay": "172.30.0.1/24"},
             {"name": "h2", "underlay": "172.30.0.2/24"},
             {"name": "h3", "underlay": "172.30.0.3/24"} ],
  "vpcs":  [ {"name": "blue", "vni": 1001, "subnet": "10.0.0.0/24"},
             {"name": "red",  "vni": 1002, "subnet": "10.0.0.0/24"} ],
  "vnics": [ {"name": "blue1", "vpc": "blue", "host": "h1", "ip": "10.0.0.1"},
             {"name": "blue2", "vpc": "blue", "host": "h2", "ip": "10.0.0.2"},
             {"name": "red3",  "vpc": "red",  "host": "h3", "ip": "10.0.0.3"} ]
}
JSON
lab_up "$WORK/topo.json" || { not_ok "lab up"; exit 1; }
check "baseline ping" lab exec blue1 -- ping -c 2 -i 0.2 -W 2 10.0.0.2

drop() { stat_of "$1" "s[\"vnics\"][\"$2\"][\"drops\"].get(\"$3\",0)"; }
# A drop is counted when jakirod has read the frame: waited for (a
# deadline), not taken for done when the tenant's ping gave up.
drop_gt() { test "$(drop "$1" "$2" "$3")" -gt "$4"; }   # HOST VNIC REASON N
gdrop() { stat_of "$1" "s[\"datapath\"][\"drops\"].get(\"$2\",0)"; }

# Spoofed source IP: a second address on the tenant's interface.
n0=$(drop h1 blue1 spoof_ip)
lab exec blue1 -- ip addr add 10.0.0.77/24 dev eth0
check_fails "spoofed source IP: no answer" lab exec blue1 -- ping -c 2 -i 0.2 -W 1 -I 10.0.0.77 10.0.0.2
check "spoofed source IP: dropped and counted" wait_until 10 drop_gt h1 blue1 spoof_ip "$n0"
lab exec blue1 -- ip addr del 10.0.0.77/24 dev eth0

# Spoofed source MAC: the tenant changes its interface's address.
n0=$(drop h1 blue1 spoof_mac)
orig=$(lab exec blue1 -- cat /sys/class/net/eth0/address)
lab exec blue1 -- ip link set eth0 address 02:66:66:66:66:66
lab exec blue1 -- ip neigh flush dev eth0
check_fails "spoofed source MAC: no answer" lab exec blue1 -- ping -c 2 -i 0.2 -W 1 10.0.0.2
check "spoofed source MAC: dropped and counted" wait_until 10 drop_gt h1 blue1 spoof_mac "$n0"
lab exec blue1 -- ip link set eth0 address "$orig"
check "after restoring the MAC, ping works" lab exec blue1 -- ping -c 2 -i 0.2 -W 2 10.0.0.2

# Underlay: VxLAN packets crafted with a UDP socket from another host.
# Inner frame: blue2 -> blue1 ICMP echo (valid but for the outer checks).
send_vxlan() {   # FROM_HOST VNI FLAGS
	lab exec "$1" -- python3 - "$2" "$3" <<'PY'
import socket, struct, sys
vni, flags = int(sys.argv[1]), int(sys.argv[2], 0)
def csum(b):
    if len(b) % 2: b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b)); s = (s & 0xffff) + (s >> 16); s += s >> 16
    return (~s) & 0xffff
icmp = struct.pack("!BBHHH", 8, 0, 0, 1, 1) + b"jakiro"
icmp = icmp[:2] + struct.pack("!H", csum(icmp)) + icmp[4:]
ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(icmp), 0, 0, 64, 1, 0,
                 socket.inet_aton("10.0.0.2"), socket.inet_aton("10.0.0.1"))
ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
eth = bytes.fromhex("0203e9000001") + bytes.fromhex("0203e9000002") + b"\x08\x00"
vx = struct.pack("!B3xI", flags, vni << 8)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for _ in range(5):
    s.sendto(vx + eth + ip + icmp, ("172.30.0.1", 4789))
PY
}
wait_drop() { wait_until 5 sh -c "[ \$($LAB ctl $1 -- --json show stats | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"datapath\"][\"drops\"].get(\"$2\",0))') -gt $3 ]"; }

n0=$(gdrop h1 unknown_vni)
send_vxlan h2 4242 0x08
if wait_drop h1 unknown_vni "$n0"; then ok "unknown VNI: dropped and counted"; else not_ok "unknown VNI: dropped and counted"; fi

n0=$(gdrop h1 unknown_vtep)
send_vxlan h3 1001 0x08    # h3 serves only red (1002), not blue
if wait_drop h1 unknown_vtep "$n0"; then ok "VTEP not serving the VNI: dropped and counted"; else not_ok "VTEP not serving the VNI: dropped and counted"; fi

# (On the kernel fast path, jk_underlay_decap on the underlay device makes
# this check before the kernel's vxlan, which would drop it uncounted.)
n0=$(gdrop h1 vxlan_flags)
send_vxlan h2 1001 0x00
if wait_drop h1 vxlan_flags "$n0"; then ok "VxLAN without I flag: dropped and counted"; else not_ok "VxLAN without I flag: dropped and counted"; fi

n0=$(stat_of h1 's["vnics"]["blue1"]["ingress"]["other"]["packets"]')
send_vxlan h2 1001 0x08    # the valid one: delivered
if wait_until 5 sh -c "[ \$($LAB ctl h1 -- --json show stats | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"vnics\"][\"blue1\"][\"ingress\"][\"other\"][\"packets\"])') -gt $n0 ]"; then
	ok "well-formed VxLAN from the right VTEP: delivered"
else
	not_ok "well-formed VxLAN from the right VTEP: delivered"
fi
check "daemon h1 still answers" lab ctl h1 -- show vnics
exit $FAILED
