# tests/bench/peer/haproxy.sh: HAProxy (Debian's haproxy) in HTTP mode on
# TCP 80 to one upstream, server connections reused (`http-reuse always`),
# one thread: the peer of apps/proxy's figures (tests/bench/proxy.py). The
# upstream is the kernel command line's bench.upstream=HOST:PORT (default
# 10.0.2.2:8081).
PEER_PKGS=(haproxy)
PEER_BINS=(/usr/sbin/haproxy)
peer_install() {
	local r=$1
	echo haproxy >"$r/peer/name"
	mkdir -p "$r/etc/haproxy"
	cat >"$r/etc/haproxy/haproxy.cfg.in" <<'EOC'
global
    daemon
    maxconn 1024
    nbthread 1
    pidfile /run/haproxy.pid
defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
    http-reuse always
frontend front
    bind :80
    default_backend back
backend back
    server up UPSTREAM
EOC
	cat >"$r/peer/start" <<'EOS'
#!/bin/sh
up=10.0.2.2:8081
for a in $(cat /proc/cmdline); do case "$a" in bench.upstream=*) up="${a#bench.upstream=}" ;; esac; done
sed "s/UPSTREAM/$up/" /etc/haproxy/haproxy.cfg.in >/etc/haproxy/haproxy.cfg
/usr/sbin/haproxy -f /etc/haproxy/haproxy.cfg
EOS
	cat >"$r/peer/check" <<'EOS'
#!/bin/sh
wget -q -O /dev/null http://127.0.0.1/index.html
EOS
	chmod 0755 "$r/peer/start" "$r/peer/check"
}
