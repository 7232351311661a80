# tests/bench/peer/knot.sh: Knot DNS (Debian's knot), authoritative for the
# zone the benchmark appends at boot as /peer/data/zone.db (its origin in
# /peer/data/origin), on UDP and TCP 53; Knot's own worker counts for one
# CPU, no journal, the zone file never rewritten.
PEER_PKGS=(knot)
PEER_BINS=(/usr/sbin/knotd)
peer_install() {
	local r=$1
	echo knot >"$r/peer/name"
	mkdir -p "$r/var/lib/knot" "$r/run/knot" "$r/etc/knot"
	cat >"$r/peer/start" <<'EOS'
#!/bin/sh
origin=$(cat /peer/data/origin)
mkdir -p /run/knot /var/lib/knot
cat >/etc/knot/knot.conf <<EOC
server:
    rundir: "/run/knot"
    listen: 0.0.0.0@53
log:
  - target: stderr
    any: error
database:
    storage: "/var/lib/knot"
zone:
  - domain: $origin
    file: "/peer/data/zone.db"
    zonefile-sync: -1
    zonefile-load: whole
    journal-content: none
    semantic-checks: off
EOC
/usr/sbin/knotd -c /etc/knot/knot.conf -d
EOS
	cat >"$r/peer/check" <<'EOS'
#!/bin/sh
nslookup -type=soa "$(cat /peer/data/origin)" 127.0.0.1 2>/dev/null | grep -q "origin\|mail addr\|serial"
EOS
	chmod 0755 "$r/peer/start" "$r/peer/check"
}
