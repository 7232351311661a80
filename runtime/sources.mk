# runtime/: the application runtime: the app API's side (api, routes,
# services), the HTTP(S) server in http/, echo, per-source connection
# accounting, /metrics, the site (baked or from the ESP), cloud metadata.
# Hot: the server and its parser, the connection table, echo, the API's
# request side. Cold: start-up, HTTPS set-up, the /metrics text, the ESP
# site's index, the metadata fetch, the TCP/UDP services.
HOT_SRCS += runtime/conntab.c runtime/site.c runtime/echo.c runtime/api.c \
	runtime/http/http.c runtime/http/server.c runtime/http/routes.c
COLD_SRCS += runtime/app.c runtime/site_esp.c runtime/metrics.c runtime/metadata.c runtime/services.c \
	runtime/http/https.c runtime/store_api.c
# The runtime lwIP serves (no start-up, metadata or ESP site): lwip-check
# links it with lwIP alone; the host tests run it over the host's lwIP.
RUNTIME_CORE := conntab http site server https metrics echo api routes services
