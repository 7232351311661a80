/* vireo's application API, all of it: include this in an app's C file.
 * docs/apps.md explains it with apps/template as the example. */
#ifndef VIREO_API_VIREO_H
#define VIREO_API_VIREO_H

#include "vireo/app.h"
#include "vireo/config.h"
#include "vireo/files.h"
#include "vireo/http.h"
#include "vireo/metrics.h"
#include "vireo/net.h"

#endif
