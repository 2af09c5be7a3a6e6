#include "ibqos_plugin.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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

void ibqos_log_changed(struct ibqos_ctx *ctx, char *last, size_t len, osm_log_level_t level,
		       const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (!strncmp(buf, last, len))
		return;
	snprintf(last, len, "%s", buf);
	ibqos_log(ctx, level, "%s", buf);
}
