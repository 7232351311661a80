# tests/bench/peer/etcd.sh: etcd 3.4 (Debian's etcd-server), one member,
# clients on TCP 2379 (the v3 API's HTTP/JSON gateway answers there too:
# POST /v3/kv/put, /v3/kv/range), its WAL fsync'ed before every answer as
# etcd always does. Its data directory is on the guest's first virtio-blk
# disk (/dev/vda, ext4, made by the benchmark on the host:
# tests/bench/store.py), mounted at /data.
PEER_PKGS=(etcd-server)
PEER_BINS=(/usr/bin/etcd)
PEER_MODULES=(virtio_blk ext4 crc32c_generic)
peer_install() {
	local r=$1
	echo etcd >"$r/peer/name"
	mkdir -p "$r/data"
	cat >"$r/peer/start" <<'EOS'
#!/bin/sh
mount -t ext4 -o noatime /dev/vda /data || { echo "BENCH-FAIL: no data disk"; exit 1; }
ip=$(ip -4 -o addr show dev eth0 | awk '{print $4}' | cut -d/ -f1)
/usr/bin/etcd --name peer --data-dir /data/etcd \
	--listen-client-urls http://0.0.0.0:2379 --advertise-client-urls "http://$ip:2379" \
	--listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
	--initial-cluster peer=http://127.0.0.1:2380 --log-outputs stderr >/run/etcd.log 2>&1 &
EOS
	cat >"$r/peer/check" <<'EOS'
#!/bin/sh
wget -q -O- http://127.0.0.1:2379/health | grep -q true
EOS
	chmod 0755 "$r/peer/start" "$r/peer/check"
}
