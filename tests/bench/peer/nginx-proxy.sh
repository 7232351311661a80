# tests/bench/peer/nginx-proxy.sh: nginx (Debian's nginx-light) as a
# reverse proxy on TCP 80 to one upstream, with upstream keep-alive
# (`keepalive 32`, HTTP/1.1, Connection cleared), one worker, no access
# log: the peer of apps/proxy's figures (tests/bench/proxy.py). The
# upstream is the kernel command line's bench.upstream=HOST:PORT (default
# 10.0.2.2:8081).
PEER_PKGS=(nginx-light)
PEER_BINS=(/usr/sbin/nginx)
peer_install() {
	local r=$1
	echo nginx-proxy >"$r/peer/name"
	mkdir -p "$r/etc/nginx" "$r/var/lib/nginx" "$r/var/log/nginx"
	cat >"$r/etc/nginx/proxy.conf.in" <<'EOC'
user nobody nogroup;
worker_processes 1;
error_log /run/nginx-error.log;
pid /run/nginx.pid;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path /tmp/nginx-body;
    proxy_temp_path /tmp/nginx-proxy;
    upstream backend { server UPSTREAM; keepalive 32; }
    server {
        listen 80 reuseport;
        location / {
            proxy_pass http://backend;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
    }
}
EOC
	cat >"$r/peer/start" <<'EOS'
#!/bin/sh
up=10.0.2.2:8081
for a in $(cat /proc/cmdline); do case "$a" in bench.upstream=*) up="${a#bench.upstream=}" ;; esac; done
sed "s/UPSTREAM/$up/" /etc/nginx/proxy.conf.in >/etc/nginx/proxy.conf
/usr/sbin/nginx -c /etc/nginx/proxy.conf
EOS
	cat >"$r/peer/check" <<'EOS'
#!/bin/sh
wget -q -O /dev/null http://127.0.0.1/index.html
EOS
	chmod 0755 "$r/peer/start" "$r/peer/check"
}
