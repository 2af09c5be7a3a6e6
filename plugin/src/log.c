#include "ibqos_plugin.h"

#include <stdarg.h>
#include <stdio.h>

void ibqos_log(struct ibqos_ctx *ctx, osm_log_level_t level, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	if (!osm_log_is_active(&ctx->osm->log, level))
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	osm_log(&ctx->osm->log, level, "%s\n", buf);
}
