#!/usr/bin/env bash
# A host can only speak for itself (docs/security.md, docs/cluster.md
# "Trust"): the lab's etcd takes TLS with client certificates and its own
# authentication, a user and role per host.  h3 turns rogue with its own
# valid credentials and tries to
#   (a) hijack blue2's address 10.0.0.2: overwrite h2's key (etcd refuses),
#       or claim the address again under its own prefix (the other hosts
#       keep the older claim, h2's, and count the newer one);
#   (b) publish in green, a VPC it does not serve (etcd refuses), or in
#       red with a VTEP, a host or a lease that are not its own, or an
#       address outside the subnet (the other hosts ignore it and count it);
#   (c) change blue2's policy (etcd refuses: policies are the control
#       role's) or rewrite h2's host record (etcd refuses).
# Through all of it blue1 keeps reaching blue2 at h2, and red1 red3.
# Each attempt is made with h3's credentials straight against etcd's API,
# the way a compromised host would; the key of blue2's claim is looked up
# in etcd (by its value), so the same test fails on a tree without this
# protection (docs/security.md shows that run).
# datapaths: user ebpf
source "$(dirname "$0")/../lib.sh"
need ping python3 etcd openssl

P=$LAB_PREFIX
cat > "$WORK/topo.json" <<'JSON'
{
  "hosts": [ {"name": "h1", "underlay": "172.30.0.1/24"},
             {"name": "h2", "underlay": "172.30.0.2/24"},
             {"name": "h3", "underlay": "172.30.0.3/24", "vpcs": ["blue", "red"]} ],
  "vpcs":  [ {"name": "blue",  "vni": 1001, "subnet": "10.0.0.0/24"},
             {"name": "red",   "vni": 1002, "subnet": "10.0.0.0/24"},
             {"name": "green", "vni": 1003, "subnet": "10.0.0.0/24"} ],
  "vnics": [ {"name": "blue1",  "vpc": "blue",  "host": "h1", "ip": "10.0.0.1"},
             {"name": "blue2",  "vpc": "blue",  "host": "h2", "ip": "10.0.0.2"},
             {"name": "red1",   "vpc": "red",   "host": "h1", "ip": "10.0.0.1"},
             {"name": "red3",   "vpc": "red",   "host": "h3", "ip": "10.0.0.3"},
             {"name": "green1", "vpc": "green", "host": "h1", "ip": "10.0.0.1"},
             {"name": "green2", "vpc": "green", "host": "h2", "ip": "10.0.0.2"} ],
  "control": {"etcd": "172.30.0.250/jakiro", "lease_ttl_s": 5}
}
JSON
export JAKIRO_LAB_LOGS=${JAKIRO_LAB_LOGS:-$WORK/logs}
lab_up "$WORK/topo.json" >/dev/null || { not_ok "lab with etcd up"; exit 1; }
ok "lab with etcd (TLS, client certificates, authentication) up"
PKI=/run/jakiro-lab/$P/pki

# as WHO PATH JSON: a request to etcd as WHO (its certificate and user),
# from etcd's namespace.  Prints etcd's reply; exit 3 when etcd refused.
as() {
	ip netns exec "$P-etcd" python3 - "$@" <<'PY'
import json, os, ssl, sys, urllib.request, urllib.error
who, path, body = sys.argv[1:4]
pki = "/run/jakiro-lab/%s/pki/" % os.environ["P"]
url, ctx, h = "http://172.30.0.250:2379", None, {"Content-Type": "application/json"}
if os.path.isdir(pki):       # a tree without TLS: the same requests, unauthenticated
    url = "https://172.30.0.250:2379"
    ctx = ssl.create_default_context(cafile=pki + "ca.pem")
    ctx.load_cert_chain(pki + who + ".pem", pki + who + "-key.pem")
    auth = {"name": who, "password": open(pki + who + ".password").readline().strip()}
    r = urllib.request.urlopen(urllib.request.Request(url + "/v3/auth/authenticate", json.dumps(auth).encode(), h),
                               context=ctx, timeout=10)
    h["Authorization"] = json.load(r)["token"]
try:
    r = urllib.request.urlopen(urllib.request.Request(url + path, body.encode(), h), context=ctx, timeout=10)
    print(r.read().decode())
except urllib.error.HTTPError as e:
    print(e.read().decode())
    sys.exit(3)
PY
}
export P
b64() { printf %s "$1" | base64 -w0; }
put() {       # WHO KEY VALUE [LEASE]: a put as WHO; fails when etcd refuses
	as "$1" /v3/kv/put "{\"key\":\"$(b64 "$2")\",\"value\":\"$(b64 "$3")\"${4:+,\"lease\":\"$4\"}}"
}
refused() {   # WHO KEY VALUE: etcd refuses the put, saying why
	! put "$@" > "$WORK/refused.out" && grep -q "permission denied" "$WORK/refused.out"
}
key_of() {    # VNI HOST IP: the key holding HOST's claim of IP (looked up by its value)
	as root /v3/kv/range "{\"key\":\"$(b64 "/jakiro/vni/$1/vlt/")\",\"range_end\":\"$(b64 "/jakiro/vni/$1/vlt0")\"}" |
	python3 -c "import base64, json, sys
for kv in json.load(sys.stdin).get('kvs', []):
    k, v = (base64.b64decode(kv[f]).decode() for f in ('key', 'value'))
    if k.endswith('/$3') and json.loads(v)['host'] == '$2':
        print(k)"
}
h3_lease=$(stat_of h3 's["etcd"]["lease"]')
refusals() {  # HOST REASON: what HOST counts as refused for REASON
	stat_of "$1" "s['etcd'].get('vlt_refused_by', {}).get('$2', 0)"
}
more_refusals() {   # HOST REASON N: HOST counted more than N
	[ "$(refusals "$1" "$2")" -gt "$3" ]
}
vtep_is() {   # HOST VPC IP VTEP: HOST forwards VPC's IP to VTEP
	[ "$(lab ctl "$1" -- show vlt | awk -v vpc="$2" -v ip="$3" \
		'$1 == vpc && $3 == ip { for (i = 1; i < NF; i++) if ($i == "vtep") print $(i + 1) }')" = "$4" ]
}
no_entry() {  # HOST VPC IP: HOST has no entry for it
	! lab ctl "$1" -- show vlt | grep -qE "^$2 +[0-9]+ +$3 "
}
check "blue1 (h1) reaches blue2 (h2) before the attacks" wait_until 10 lab exec blue1 -- ping -c 1 -W 1 10.0.0.2
check "red1 (h1) reaches red3 (h3) before the attacks" wait_until 10 lab exec red1 -- ping -c 1 -W 1 10.0.0.3
check "h1 forwards blue 10.0.0.2 to h2" vtep_is h1 blue 10.0.0.2 172.30.0.2

# -- (a) hijacking blue2's address ------------------------------------------------
victim=$(key_of 1001 h2 10.0.0.2)
check "blue2's claim is in etcd ($victim)" test -n "$victim"
HIJACK='{"host":"h3","mac":"02:00:00:00:00:33","vnic":"evil","vtep":"172.30.0.3"}'
check "(a) h3 overwriting h2's key $victim: refused by etcd (permission denied)" refused h3 "$victim" "$HIJACK" "$h3_lease"
check "(a) h2's claim is unchanged" test -n "$(key_of 1001 h2 10.0.0.2)"
before=$(refusals h1 held)
check "(a) h3 claiming 10.0.0.2 again under its own prefix: etcd takes it (h3 serves blue)" \
	put h3 /jakiro/vni/1001/vlt/h3/10.0.0.2 "$HIJACK" "$h3_lease"
check "(a) h1 refuses it: h2's older claim holds the address (vlt_refused_by.held)" wait_until 5 more_refusals h1 held "$before"
check "(a) h1 still forwards blue 10.0.0.2 to h2" vtep_is h1 blue 10.0.0.2 172.30.0.2
check "(a) blue1 still reaches blue2" lab exec blue1 -- ping -c 2 -W 2 10.0.0.2

# -- (a') squatting on a free address with a claim every host refuses -------------
ip netns add "$P-b50" && at_exit "ip netns del $P-b50"
check "(a') h3 claims the free blue 10.0.0.50 under no lease: etcd takes it (its own prefix)" \
	put h3 /jakiro/vni/1001/vlt/h3/10.0.0.50 '{"host":"h3","mac":"02:00:00:00:00:50","vnic":"squat","vtep":"172.30.0.3"}'
check "(a') h1's vnic add of 10.0.0.50 succeeds: an unleased claim holds nothing" \
	lab ctl h1 -- vnic add blue50 vpc blue ip 10.0.0.50 netns "$P-b50"
check "(a') h1's claim of 10.0.0.50 is in etcd" test -n "$(key_of 1001 h1 10.0.0.50)"
check "(a') h2 forwards blue 10.0.0.50 to h1" wait_until 5 vtep_is h2 blue 10.0.0.50 172.30.0.1
check "(a') blue50 deleted on h1" lab ctl h1 -- vnic del blue50

# -- (b) a VNI it does not serve; a VTEP, host, lease or address not its own ------
check "(b) h3 publishing in green (VNI 1003, not its VPC): refused by etcd" \
	refused h3 /jakiro/vni/1003/vlt/h3/10.0.0.9 '{"host":"h3","mac":"02:00:00:00:00:39","vnic":"evil","vtep":"172.30.0.3"}' "$h3_lease"
check "(b) ... and under another host's prefix there: refused by etcd" \
	refused h3 /jakiro/vni/1003/vlt/h2/10.0.0.9 '{"host":"h2","mac":"02:00:00:00:00:39","vnic":"evil","vtep":"172.30.0.2"}' "$h3_lease"
check "(b) h1 has no green 10.0.0.9" no_entry h1 green 10.0.0.9
attempt() {   # NAME REASON KEY VALUE [LEASE]: h3 writes it; h1 ignores it and counts REASON
	local name=$1 reason=$2 before
	shift 2
	before=$(refusals h1 "$reason")
	check "(b) $name: etcd takes it (h3's own prefix)" put h3 "$@"
	check "(b) ... h1 ignores it and counts it (vlt_refused_by.$reason)" wait_until 5 more_refusals h1 "$reason" "$before"
}
attempt "h3 publishing red 10.0.0.9 at h2's VTEP" vtep \
	/jakiro/vni/1002/vlt/h3/10.0.0.9 '{"host":"h3","mac":"02:00:00:00:00:39","vnic":"evil","vtep":"172.30.0.2"}' "$h3_lease"
attempt "h3 publishing an entry that names h2" wrong_host \
	/jakiro/vni/1002/vlt/h3/10.0.0.10 '{"host":"h2","mac":"02:00:00:00:00:3a","vnic":"evil","vtep":"172.30.0.2"}' "$h3_lease"
attempt "h3 publishing under no lease (it would outlive h3)" lease \
	/jakiro/vni/1002/vlt/h3/10.0.0.11 '{"host":"h3","mac":"02:00:00:00:00:3b","vnic":"evil","vtep":"172.30.0.3"}'
attempt "h3 publishing 10.9.9.9, outside red's subnet" subnet \
	/jakiro/vni/1002/vlt/h3/10.9.9.9 '{"host":"h3","mac":"02:00:00:00:00:3c","vnic":"evil","vtep":"172.30.0.3"}' "$h3_lease"
for ip in 10.0.0.9 10.0.0.10 10.0.0.11 10.9.9.9; do
	check "(b) h1 learned no red $ip" no_entry h1 red "$ip"
done
check "(b) h1 logged a refusal, naming the key and the reason" \
	grep -qE "etcd entry /jakiro/vni/100[12]/vlt/h3/[0-9.]+ refused \(" "/run/jakiro-lab/$P/h1.log"
check "(b) red1 still reaches red3" lab exec red1 -- ping -c 2 -W 2 10.0.0.3

# -- (c) a neighbour's policy, a neighbour's host record ------------------------------
check "(c) h3 setting blue2's policy: refused by etcd" refused h3 /jakiro/vni/1001/policy/10.0.0.2 '{"rate":"1mbit"}'
ctl_as_h3() {
	! ip netns exec "$P-h3" "$JAKIRO_BIN/jakiroctl" --etcd-conf "$PKI/h3.etcd.json" cluster policy set blue 10.0.0.2 \
		rate 1mbit > "$WORK/c.out" 2>&1 && grep -q 'permission denied' "$WORK/c.out"
}
check "(c) h3 through jakiroctl with its own credentials: refused, saying so" ctl_as_h3
check "(c) h3 rewriting h2's host record: refused by etcd" refused h3 /jakiro/hosts/h2 '{"vtep":"172.30.0.3"}'
check "(c) the control role sets blue2's policy" \
	ip netns exec "$P-h1" "$JAKIRO_BIN/jakiroctl" --etcd-conf "$PKI/control.etcd.json" cluster policy set blue 10.0.0.2 rate 30mbit
policy_is() { lab ctl h2 -- show vnics | grep -qE "^blue2 .* $1"; }
check "(c) h2 applied the control role's policy, not h3's" wait_until 5 policy_is 30mbit
check "(c) the control role may not publish VLT entries" \
	refused control /jakiro/vni/1001/vlt/h2/10.0.0.77 '{"host":"h2","mac":"02:00:00:00:00:4d","vnic":"x","vtep":"172.30.0.2"}'
tls_request() {   # with|without: a request to etcd with or without h1's client certificate.
	# Prints "ssl" when the TLS handshake was refused, "http N" when etcd
	# answered (any status), else the exception.
	ip netns exec "$P-etcd" python3 - "$1" "$PKI" <<'PY'
import ssl, sys, urllib.error, urllib.request
how, pki = sys.argv[1:3]
ctx = ssl.create_default_context(cafile=pki + "/ca.pem")
if how == "with":
    ctx.load_cert_chain(pki + "/h1.pem", pki + "/h1-key.pem")
try:
    r = urllib.request.urlopen(urllib.request.Request("https://172.30.0.250:2379/v3/kv/range", b"{}"),
                               context=ctx, timeout=10)
    print("http", r.status)
except urllib.error.HTTPError as e:
    print("http", e.code)
except ssl.SSLError:
    print("ssl")
except urllib.error.URLError as e:
    print("ssl" if isinstance(e.reason, ssl.SSLError) else "other: %r" % (e.reason,))
except Exception as e:
    print("other: %r" % (e,))
PY
}
no_cert() { [ "$(tls_request without)" = ssl ]; }
with_cert() { tls_request with | grep -q '^http '; }
check "a client with h1's certificate gets an HTTP answer from etcd (the control of the next check)" with_cert
check "a client with no certificate is refused by etcd's TLS" no_cert

# -- host records: read from their own watch; a change withdraws what fails ------------
# h3 moves red3's claim to a new lease of its own (as a restart would)
# while h1 may not read host records; once it can, and h3's record names
# the new lease, h1 learns the entry.  (h1 used to read h3's record with a
# GET from inside its watch: a failed read refused the entry, forgot red3
# and never read the record again until h3's next lease.)
role() { as root "/v3/auth/role/$1" "$2" > /dev/null; }
range_of() { printf '"key":"%s","range_end":"%s"' "$(b64 "$1")" "$(b64 "$2")"; }
grant_read() { role grant "{\"name\":\"h1\",\"perm\":{\"permType\":\"READ\",$(range_of "$1" "$2")}}"; }
revoke() { role revoke "{\"role\":\"h1\",$(range_of "$1" "$2")}"; }
value_of() {  # KEY: its value, as root reads it
	as root /v3/kv/range "{\"key\":\"$(b64 "$1")\"}" |
	python3 -c "import base64, json, sys; print(base64.b64decode(json.load(sys.stdin)['kvs'][0]['value']).decode())"
}
red3_key=$(key_of 1002 h3 10.0.0.3)
red3_val=$(value_of "$red3_key")
check "red3's claim is in etcd ($red3_key)" test -n "$red3_val"
check "h1 forwards red 10.0.0.3 to h3" vtep_is h1 red 10.0.0.3 172.30.0.3
check "h1 may read VNIs and VPCs but no host record (root changes its role)" \
	eval 'grant_read /jakiro/vni/ /jakiro/vni0 && grant_read /jakiro/vpcs/ /jakiro/vpcs0 && revoke /jakiro/ /jakiro0'
h3_lease2=$(as h3 /v3/lease/grant '{"TTL":300}' | python3 -c "import json, sys; print(json.load(sys.stdin)['ID'])")
seen_before=$(stat_of h1 's["etcd"]["errors"] + s["etcd"]["vlt_refused"]')
h1_saw_it() { [ "$(stat_of h1 's["etcd"]["errors"] + s["etcd"]["vlt_refused"]')" -gt "$seen_before" ]; }
check "h3 moves red3's claim to its new lease $h3_lease2" put h3 "$red3_key" "$red3_val" "$h3_lease2"
check "h1 saw it (an error or a refusal counted)" wait_until 5 h1_saw_it
check "h3's record names its new lease (as after a restart)" put h3 /jakiro/hosts/h3 '{"vtep":"172.30.0.3"}' "$h3_lease2"
check "h1 may read everything again" eval 'grant_read /jakiro/ /jakiro0 && revoke /jakiro/vni/ /jakiro/vni0 && revoke /jakiro/vpcs/ /jakiro/vpcs0'
check "h3 puts red3's claim again under its new lease" put h3 "$red3_key" "$red3_val" "$h3_lease2"
check "h1 forwards red 10.0.0.3 to h3 (the record read again)" wait_until 5 vtep_is h1 red 10.0.0.3 172.30.0.3
check "red1 reaches red3" lab exec red1 -- ping -c 2 -W 2 10.0.0.3

# h3's record goes: what h1 learned of h3 no longer counts, at once (no
# entry of h3's changes: only its record).  It comes back: h1 learns the
# entries again (they were not rewritten either).
before=$(refusals h1 no_host)
check "h3 deletes its host record" as h3 /v3/kv/deleterange "{\"key\":\"$(b64 /jakiro/hosts/h3)\"}"
check "h1 forgets red 10.0.0.3" wait_until 5 no_entry h1 red 10.0.0.3
check "... and counts it (vlt_refused_by.no_host)" more_refusals h1 no_host "$before"
check "h3 puts its record back" put h3 /jakiro/hosts/h3 '{"vtep":"172.30.0.3"}' "$h3_lease2"
check "h1 forwards red 10.0.0.3 to h3 again" wait_until 5 vtep_is h1 red 10.0.0.3 172.30.0.3
before=$(refusals h1 vtep)
check "h3's record names another VTEP" put h3 /jakiro/hosts/h3 '{"vtep":"172.30.0.33"}' "$h3_lease2"
check "h1 forgets red 10.0.0.3 (vlt_refused_by.vtep)" wait_until 5 no_entry h1 red 10.0.0.3
check "... and counts it" more_refusals h1 vtep "$before"
check "h3's record is right again" put h3 /jakiro/hosts/h3 '{"vtep":"172.30.0.3"}' "$h3_lease2"
check "h1 forwards red 10.0.0.3 to h3 once more" wait_until 5 vtep_is h1 red 10.0.0.3 172.30.0.3

# -- a jakirod with a valid certificate and a wrong password ------------------------------
echo wrong > "$WORK/wrong.password"
python3 -c "import json, sys
c = json.load(open('$PKI/h3.etcd.json')); c['password_file'] = '$WORK/wrong.password'
print(json.dumps({'host': 'h3', 'vtep': '172.30.0.250', 'ctl_socket': '$WORK/bad.sock', 'state_file': '$WORK/bad.state',
                  'vpcs': [], 'vnics': [], 'etcd': c}))" > "$WORK/badpw.json"
ip netns exec "$P-etcd" timeout 20 "$JAKIRO_BIN/jakirod" -c "$WORK/badpw.json" > "$WORK/badpw.out" 2>&1; rc=$?
check "a jakirod whose password etcd refuses stops at start (exit 1)" test "$rc" -eq 1
check "... saying so" grep -q "authenticating as user h3 refused" "$WORK/badpw.out"

# -- after all of it --------------------------------------------------------------------
check "blue1 reaches blue2 after all the attacks" lab exec blue1 -- ping -c 2 -W 2 10.0.0.2
check "green1 reaches green2" lab exec green1 -- ping -c 2 -W 2 10.0.0.2
check "h1 forwards blue 10.0.0.2 to h2 still" vtep_is h1 blue 10.0.0.2 172.30.0.2

exit $FAILED
