# tests/bench/peer/nsd.sh: NSD (Debian's nsd), authoritative for the zone the
# benchmark appends at boot as /peer/data/zone.db (its origin in
# /peer/data/origin), on UDP and TCP 53, one server process (the guest has
# one CPU), no rate limiting, minimal responses (as vireo's).
PEER_PKGS=(nsd)
PEER_BINS=(/usr/sbin/nsd)
peer_install() {
	local r=$1
	echo nsd >"$r/peer/name"
	mkdir -p "$r/var/lib/nsd" "$r/etc/nsd"
	cat >"$r/peer/start" <<'EOS'
#!/bin/sh
origin=$(cat /peer/data/origin)
cat >/etc/nsd/nsd.conf <<EOC
server:
  ip-address: 0.0.0.0
  port: 53
  username: ""
  zonesdir: "/peer/data"
  database: ""
  pidfile: "/run/nsd.pid"
  xfrdfile: "/var/lib/nsd/xfrd.state"
  zonelistfile: "/var/lib/nsd/zone.list"
  server-count: 1
  minimal-responses: yes
  rrl-ratelimit: 0
  verbosity: 0
remote-control:
  control-enable: no
zone:
  name: $origin
  zonefile: zone.db
EOC
/usr/sbin/nsd -c /etc/nsd/nsd.conf
EOS
	cat >"$r/peer/check" <<'EOS'
#!/bin/sh
nslookup -type=soa "$(cat /peer/data/origin)" 127.0.0.1 2>/dev/null | grep -q "origin\|mail addr\|serial"
EOS
	chmod 0755 "$r/peer/start" "$r/peer/check"
}
