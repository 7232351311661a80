/* The apps' resolver's runtime side (runtime/resolve.c). */
#ifndef VIREO_RUNTIME_RESOLVE_H
#define VIREO_RUNTIME_RESOLVE_H

/* One resolved address the egress policy refused (vireo_tcp_connect_name). */
void resolve_refused_egress(void);

#endif
