# runtime/: the application runtime: the app API's side (api, routes,
# services), the HTTP(S) server in http/, per-source connection accounting,
# the site (baked or from the ESP), cloud metadata. (Echo is an
# app: apps/echo.)
# Hot: the server (its state machine and exchanges) and its parser, the
# API's request side. Cold: admission and the connection table (once per
# accept, not per request or segment), the buffer-set and send-slot counts
# (a few compares a request), start-up, the listeners, HTTPS set-up, the ESP site's
# index, the metadata fetch, the TCP/UDP services, the store's app API, the
# Content-Type table (looked up when a site is indexed, not per request),
# byte ranges (a Range request's own path), the HTTP client with its response
# parser and chunked decoder (linked only when an app calls it: gc-sections),
# chunked and streamed request bodies (uploads, not the site's path), an
# app's own log stream (an access log: linked only when an app calls it).
HOT_SRCS += runtime/site.c runtime/api.c \
	runtime/http/http.c runtime/http/server.c runtime/http/exchange.c runtime/http/routes.c
COLD_SRCS += runtime/conntab.c runtime/http/slots.c runtime/http/admission.c runtime/app.c runtime/site_esp.c runtime/metadata.c runtime/services.c \
	runtime/http/https.c runtime/http/hsrate.c runtime/http/hsgate.c runtime/http/listen.c runtime/http/allow.c runtime/http/proxyproto.c runtime/store_api.c \
	runtime/http/mime.c runtime/http/range.c runtime/egress.c runtime/tcp_out.c runtime/resolve.c \
	runtime/http/response.c runtime/http/chunked.c runtime/http_client.c runtime/http/reqbody.c \
	runtime/acme.c runtime/log_stream.c runtime/acme_state.c runtime/keep_rec.c runtime/acme_ari.c
# The runtime lwIP serves (no start-up, metadata or ESP site): lwip-check
# links it with lwIP alone; the host tests run it over the host's lwIP.
RUNTIME_CORE := tcpconn conntab http slots mime range site server exchange reqbody admission hsrate hsgate listen https api routes services allow proxyproto egress tcp_out \
	http_client response chunked \
	resolve dns_client dns_cache dns_msg
