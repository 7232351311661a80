-- wrk script for tests/bench/kv.py: every request PUTs a 64-byte value to
-- one of 1,000 keys in turn (/kv/bench/0 .. /kv/bench/999), so the store
-- stays at a fixed size (1,000 x kv_charge(10..12, 64) bytes, under 160 KB)
-- however long the run. wrk.format adds the Content-Length.
local n = 0
local body = string.rep("v", 64)

request = function()
	n = (n + 1) % 1000
	return wrk.format("PUT", "/kv/bench/" .. n, nil, body)
end
