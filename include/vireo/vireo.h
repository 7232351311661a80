/* vireo's application API, all of it: include this in an app's C file.
 * docs/apps.md explains it with apps/template as the example. An app is
 * built with -Iinclude and its own folder only: these headers are all it
 * can include. The toolkit part (types, string, byteorder, parse, outbuf,
 * siphash, list) is the kernel's own code (lib/), declared here. */
#ifndef VIREO_API_VIREO_H
#define VIREO_API_VIREO_H

#include "vireo/types.h"
#include "vireo/string.h"
#include "vireo/byteorder.h"
#include "vireo/parse.h"
#include "vireo/outbuf.h"
#include "vireo/siphash.h"
#include "vireo/list.h"
#include "vireo/app.h"
#include "vireo/config.h"
#include "vireo/files.h"
#include "vireo/http.h"
#include "vireo/metrics.h"
#include "vireo/net.h"
#include "vireo/http_client.h"

#endif
