/* SPDX-License-Identifier: MIT */
/*
 * demux.c - incremental demultiplexer of the Docker attach stream (see
 * demux.h).  Fuzzed by fuzz-demux.c.
 */
#include "config.h"

#include <string.h>

#include "plugins/docker/demux.h"

void
dk_demux_init(struct dk_demux *d)
{
	memset(d, 0, sizeof(*d));
}

int
dk_demux_idle(const struct dk_demux *d)
{
	return !d->broken && d->have == 0 && d->remain == 0;
}

int
dk_demux_feed(struct dk_demux *d, const uint8_t *buf, size_t len, dk_demux_cb cb, void *ctx)
{
	if (d->broken)
		return -1;
	while (len > 0) {
		if (d->remain == 0) {
			size_t take = sizeof(d->hdr) - d->have;
			if (take > len)
				take = len;
			memcpy(d->hdr + d->have, buf, take);
			d->have += (uint32_t)take;
			buf += take;
			len -= take;
			if (d->have < sizeof(d->hdr))
				return 0;
			d->have = 0;
			if (d->hdr[0] > 2 || d->hdr[1] || d->hdr[2] || d->hdr[3]) {
				d->broken = 1;
				return -1;
			}
			d->stream = d->hdr[0];
			d->remain = (uint32_t)d->hdr[4] << 24 | (uint32_t)d->hdr[5] << 16 |
			            (uint32_t)d->hdr[6] << 8 | d->hdr[7];
			continue;
		}
		size_t take = d->remain < len ? d->remain : len;
		d->remain -= (uint32_t)take;
		int r = cb(ctx, d->stream, buf, take);
		if (r)
			return r;
		buf += take;
		len -= take;
	}
	return 0;
}
