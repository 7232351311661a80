/* The ACME client's runtime side (make TLS=1; docs/https.md "ACME"): the
 * keys, the transport to the CA (an HTTP client pool over TLS), HTTP-01's
 * route, the timers and backoff, installing the certificate, and what
 * operators see (console lines, /metrics, `cert`). The protocol itself is
 * net/acme/acme_client.c. Configured by acme.directory=, acme.names=,
 * acme.contact=. */
#ifndef VIREO_RUNTIME_ACME_H
#define VIREO_RUNTIME_ACME_H

#include "lib/types.h"

/* HTTP-01's route, /.well-known/acme-challenge/ (a runtime route served
 * on plain HTTP under http.redirect= too): from http_server_routes(). */
int acme_route_add(void);

/* After https_start() succeeded: when acme.directory= is set, checks the
 * configuration (a clear line for each mistake; HTTPS keeps serving its
 * certificate) and schedules the first order. */
void acme_start(void);

#endif
