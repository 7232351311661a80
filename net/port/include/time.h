/* <time.h> for lwIP's files in the freestanding kernel: none uses time, but
 * altcp_tls.h includes mbedTLS's headers, which with MBEDTLS_HAVE_TIME_DATE
 * (net/tls/mbedtls_config.h) include <time.h> for time_t and struct tm:
 * the same definitions mbedTLS's own files see. */
#include "../../tls/include/time.h"
