# tests/bench/peer/caddy.sh: Caddy (Debian's package) as the appliance that
# gets its own certificate: the peer of vireo's ACME figure
# (tests/bench/acme.py). From the kernel command line: bench.acme=URL (the
# CA's directory), bench.names=NAME[,NAME] (the site's names); the CA's API
# root is /peer/data/ca.pem, appended to the initramfs per run (the bench
# makes a fresh CA each time). Caddy answers /healthz with "ok", its data
# (account, certificates) in /tmp/caddy: every boot starts empty, as a
# fresh vireo does. `admin off`, no trust store installation.
PEER_PKGS=(caddy)
PEER_BINS=(/usr/bin/caddy)
peer_install() {
	local r=$1
	echo caddy >"$r/peer/name"
	mkdir -p "$r/etc/caddy"
	cat >"$r/peer/start" <<'EOS'
#!/bin/sh
acme= names=
for a in $(cat /proc/cmdline); do
	case "$a" in
	bench.acme=*) acme="${a#bench.acme=}" ;;
	bench.names=*) names="${a#bench.names=}" ;;
	esac
done
[ -n "$acme" ] && [ -n "$names" ] && [ -r /peer/data/ca.pem ] || { echo "BENCH-FAIL: caddy needs bench.acme=, bench.names= and /peer/data/ca.pem"; exit 1; }
cat >/etc/caddy/Caddyfile <<EOC
{
	admin off
	acme_ca $acme
	acme_ca_root /peer/data/ca.pem
	email ops@vireo.test
	storage file_system /tmp/caddy
	skip_install_trust
}
$(echo "$names" | tr ',' ' ') {
	respond /healthz "ok" 200
}
EOC
export HOME=/tmp XDG_DATA_HOME=/tmp/caddy-data XDG_CONFIG_HOME=/tmp/caddy-config
/usr/bin/caddy run --config /etc/caddy/Caddyfile --adapter caddyfile >/tmp/caddy.log 2>&1 &
EOS
	cat >"$r/peer/check" <<'EOS'
#!/bin/sh
wget -q -O /dev/null http://127.0.0.1/ 2>/dev/null || grep -q '"msg":"serving initial configuration"' /tmp/caddy.log
EOS
	chmod 0755 "$r/peer/start" "$r/peer/check"
}
