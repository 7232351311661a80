# tests/bench/peer/redis.sh: Redis 7 (Debian's redis-server) with
# `appendonly yes` and `appendfsync always` (every write fsync'ed to the
# append-only file before the reply), no RDB snapshots, on TCP 6379. Its
# data lives on the guest's first virtio-blk disk (/dev/vda, ext4, made by
# the benchmark on the host: tests/bench/store.py), mounted at /data; the
# console says "BENCH-FAIL: no data disk" without one.
PEER_PKGS=(redis-server)
PEER_BINS=(/usr/bin/redis-server)
PEER_MODULES=(virtio_blk ext4 crc32c_generic)
peer_install() {
	local r=$1
	echo redis >"$r/peer/name"
	mkdir -p "$r/etc/redis" "$r/data"
	cat >"$r/etc/redis/redis.conf" <<'EOC'
bind 0.0.0.0
port 6379
protected-mode no
daemonize yes
pidfile /run/redis.pid
logfile /run/redis.log
dir /data/redis
save ""
appendonly yes
appendfsync always
appendfilename "appendonly.aof"
EOC
	cat >"$r/peer/start" <<'EOS'
#!/bin/sh
mount -t ext4 -o noatime /dev/vda /data || { echo "BENCH-FAIL: no data disk"; exit 1; }
mkdir -p /data/redis
/usr/bin/redis-server /etc/redis/redis.conf
EOS
	cat >"$r/peer/check" <<'EOS'
#!/bin/sh
printf 'PING\r\n' | nc -w 1 127.0.0.1 6379 | grep -q PONG
EOS
	chmod 0755 "$r/peer/start" "$r/peer/check"
}
