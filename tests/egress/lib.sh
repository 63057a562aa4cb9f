# SPDX-License-Identifier: MIT
# tests/egress/lib.sh - loopback servers for the egress tests, and the audit
# check they share.  Sourced; needs $t, ok and bad.
#
# eg_servers: HTTP on 127.0.0.2:$P1 and HTTPS on 127.0.0.2:$P2 (a certificate
# for good.test made now by openssl, its copy in $t/ws/ca.pem), both serving
# $t/www, and on 127.0.0.2:$P3 a server nobody allows that answers SECRET.
# Ports are picked free by the kernel; the servers' pids go to pids.

# A free port on 127.0.0.2.
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.2",0)); print(s.getsockname()[1])'; }

eg_servers() {
	local tool
	for tool in python3 curl openssl; do
		command -v $tool >/dev/null || { echo "SKIP: $tool is missing"; exit 77; }
	done
	mkdir -p "$t/www" "$t/ws"
	P1=$(port) P2=$(port) P3=$(port)
	echo "egress-ok-$$" >"$t/www/index.html"
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=good.test \
		-addext "subjectAltName=DNS:good.test" -keyout "$t/key.pem" -out "$t/cert.pem" >/dev/null 2>&1 ||
		{ echo "SKIP: openssl cannot make a certificate"; exit 77; }
	cp "$t/cert.pem" "$t/ws/ca.pem"
	(cd "$t/www" && exec python3 -m http.server --bind 127.0.0.2 "$P1") >/dev/null 2>&1 &
	pids+=($!)
	python3 - "$t/www" "$P2" "$t/cert.pem" "$t/key.pem" >/dev/null 2>&1 <<-'EOF' &
	import functools, http.server, ssl, sys
	h = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
	srv = http.server.HTTPServer(("127.0.0.2", int(sys.argv[2])), h)
	ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
	ctx.load_cert_chain(sys.argv[3], sys.argv[4])
	srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
	srv.serve_forever()
	EOF
	pids+=($!)
	# A server on a port nobody allowed (the CONNECT tunnel attempt's target).
	python3 - "$P3" >/dev/null 2>&1 <<-'EOF' &
	import socket, sys
	s = socket.socket()
	s.bind(("127.0.0.2", int(sys.argv[1])))
	s.listen(5)
	while True:
	    c, _ = s.accept()
	    c.sendall(b"SECRET\n")
	    c.close()
	EOF
	pids+=($!)
	for i in $(seq 300); do
		curl -s -o /dev/null "http://127.0.0.2:$P1/" && curl -sk -o /dev/null "https://127.0.0.2:$P2/" && break
		sleep 0.1
	done
}

# eg_audit_check SESSION: the attempts the tests made are in the audit log,
# allowed ones with rule and bytes, refused ones with the reason.
eg_audit_check() {
	local log=$t/state/hs/audit.log
	python3 - "$log" "$P1" "$P2" "$P3" "$1" <<'EOF' && ok "every attempt is in the audit log with host, port, rule, decision and bytes" || bad "audit log: $(grep egress "$log" | tail -n 12)"
import json, sys
log, p1, p2, p3, sess = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
recs = [r for r in map(json.loads, open(log)) if r.get("egress")]
def find(**kw):
    return [r for r in recs if all(r["egress"].get(k) == v for k, v in kw.items())]
a = find(host="good.test", port=p1, kind="forward")
assert any(r["verdict"] == "allow" and r["egress"]["rule"] == "good.test:%d" % p1 and
           r["egress"]["bytes_in"] > 0 and r["egress"]["bytes_out"] > 0 and r["session"] == sess for r in a), a
c = find(host="good.test", port=p2, kind="connect")
assert any(r["verdict"] == "allow" and r["egress"]["bytes_in"] > 1000 for r in c), c
assert any(r["verdict"] == "deny" and "allow list" in r["egress"]["reason"] for r in find(host="bad.test")), recs
assert any(r["verdict"] == "deny" and "IP address" in r["egress"]["reason"] for r in find(host="127.0.0.2")), recs
assert any(r["verdict"] == "deny" and "IP address" in r["egress"]["reason"] for r in find(host="93.184.216.34") + find(host="1572395042")), recs
d = find(host="good.test", port=p3)
assert d and all(r["verdict"] == "deny" and r["egress"]["bytes_in"] == 0 for r in d), d
assert any(r["verdict"] == "deny" and "disagree" in (r["egress"]["reason"] or "") for r in recs), recs
s = [r for r in recs if r["egress"]["kind"] == "socks"]
assert any(r["verdict"] == "allow" and r["egress"]["host"] == "good.test" and r["egress"]["bytes_in"] > 0 for r in s), s
assert any(r["verdict"] == "deny" and r["egress"]["host"] == "bad.test" for r in s), s
assert any(r["verdict"] == "deny" and "IP address" in r["egress"]["reason"] for r in s), s
EOF
}
