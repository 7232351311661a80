/* The default appliance: the static HTTP server and the echo services. */
#include "net/app/app.h"

int app_start(u16 http_port)
{
	(void)http_port;
	return 0;
}
