#!/usr/bin/env bash
# Our packets as others see them: a capture (tcpdump) of every operation
# between two namespaces, then
#   - tshark decodes UDP 4791 as InfiniBand (RoCEv2) with the opcodes sent;
#   - scapy's RoCE layer computes, for every frame, the ICRC we put on the
#     wire (this proves the IPv4 header our ICRC assumed, ID and DF included,
#     is the one the kernel sent);
#   - every frame carries ECT(0);
#   - each side sent frames of both send paths (raw, and by its UDP socket).
cd "$(dirname "$0")/../.." || exit 1
. tests/rnic/lib.sh
X=$BUILD/tests/rnic/rnic_xfer
[ -x "$X" ] || { echo "# $X missing"; exit 77; }
for c in tcpdump tshark; do command -v $c >/dev/null || { echo "# no $c"; exit 77; }; done
/usr/bin/python3 -c 'import scapy.contrib.roce' 2>/dev/null || { echo "# no python3-scapy"; exit 77; }
rn_setup 1500
PORT=18650
# What a wire carries: the soft RNIC's UDP_SEGMENT sends are cut into their
# packets before the veths (a NIC would cut them; a veth would pass them
# whole, and the capture would hold 64 KiB super-frames).
for side in "$NS1 $IF1" "$NS2 $IF2"; do
	set -- $side
	ip netns exec "$1" ethtool -K "$2" tx-udp-segmentation off >/dev/null 2>&1 ||
		{ not_ok "tx-udp-segmentation off on $2"; exit 1; }
done

# The capture runs for the whole exchange (a frame count would end it at a
# point that depends on timing, before the small single-packet operations)
# and is stopped by PID once both ends have exited. Snap length 2048 (MTU
# 1500): the ring is cut in slots of the snap length, 256 KiB by default.
rn_bg "$NS1" "$RN_TMP/tcpdump.log" tcpdump --immediate-mode -s 2048 -B 16384 -i "$IF1" \
	-w "$RN_TMP/c.pcap" "udp port 4791"
td=$RN_LAST
end=$((SECONDS + 10))
until grep -q "listening on" "$RN_TMP/tcpdump.log"; do
	[ $SECONDS -lt $end ] || { not_ok "capture starts"; exit 1; }
	sleep 0.05
done
rn_bg "$NS1" "$RN_TMP/srv.log" env JK_RNIC_STATS=1 $X -d "$IF1" -p $PORT -n 150 -t 4 -S 9000,3000,1500,1,0
srv=$RN_LAST
rn_wait_port "$NS1" $PORT 10 || { not_ok "server starts"; exit 1; }
ip netns exec "$NS2" env JK_RNIC_STATS=1 $X -d "$IF2" -p $PORT -n 150 -t 4 -S 9000,3000,1500,1,0 "$IP1" \
	>"$RN_TMP/cli.log" 2>&1
crc=$?
rn_wait_pid $srv 30
src=$?
kill -INT $td
rn_wait_pid $td 15
N=$(tshark -r "$RN_TMP/c.pcap" 2>/dev/null | wc -l)
dropped=$(sed -n 's/^\([0-9]*\) packets dropped by kernel.*/\1/p' "$RN_TMP/tcpdump.log")
echo "# tcpdump: $N frames, ${dropped:-?} dropped by kernel"
if [ $crc -eq 0 ] && [ $src -eq 0 ] && [ "$N" -gt 0 ]; then
	ok "every operation, captured ($N frames)"
else
	not_ok "every operation, captured (client $crc, server $src)"
	sed 's/^/#   /' "$RN_TMP/cli.log" "$RN_TMP/tcpdump.log"
	exit 1
fi

# Both send paths are on the wire: short sends to a peer whose frames came
# already leave raw, by the packet socket with our own headers (docs/rnic.md,
# "Raw transmit"), the rest by the UDP socket; the checks below hold for both.
counter() { sed -n "s/.* $1=\([0-9]*\).*/\1/p" "$2" | tail -1; }
bad_split=
for log in "$RN_TMP/srv.log" "$RN_TMP/cli.log"; do
	frames=$(counter tx_frames "$log") raw=$(counter tx_raw_frames "$log")
	echo "# $(basename "$log" .log): $frames frames sent, ${raw:-0} raw"
	[ "${raw:-0}" -gt 0 ] && [ "${frames:-0}" -gt "${raw:-0}" ] || bad_split="$bad_split $(basename "$log" .log)"
done
if [ -z "$bad_split" ]; then
	ok "each side sent frames both raw and by its UDP socket"
else
	not_ok "each side sent frames both raw and by its UDP socket (not:$bad_split)"
fi

ops=$(tshark -r "$RN_TMP/c.pcap" -Y infiniband -T fields -e infiniband.bth.opcode 2>/dev/null |
	sort -un | tr '\n' ' ')
echo "# tshark: BTH opcodes seen: $ops"
need="0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17"
missing=
for o in $need; do
	case " $ops " in *" $o "*) ;; *) missing="$missing $o";; esac
done
if [ -z "$missing" ]; then
	ok "tshark decodes RoCEv2 (all 18 RC opcodes we use)"
else
	not_ok "tshark decodes RoCEv2 (missing opcodes:$missing)"
fi

read -r frames good bad ect0 sops < <(/usr/bin/python3 tests/rnic/pcap_icrc.py "$RN_TMP/c.pcap")
echo "# scapy: $frames frames, ICRC good $good bad $bad, ECT(0) $ect0, opcodes $sops"
if [ "$frames" -gt 0 ] && [ "$bad" -eq 0 ] && [ "$good" -eq "$frames" ]; then
	ok "scapy's ICRC equals ours on all $frames frames"
else
	not_ok "scapy's ICRC equals ours ($bad of $frames differ)"
fi
if [ "$ect0" -eq "$frames" ]; then
	ok "every frame is ECT(0)"
else
	not_ok "every frame is ECT(0) ($ect0 of $frames)"
fi
