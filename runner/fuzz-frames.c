/* SPDX-License-Identifier: MIT */
/* libFuzzer target for the frame decoder and payload parsers.
 *
 *   make fuzz-runner && runner/fuzz-frames -max_total_time=60
 *
 * The same entry point runs in `make check` (tests/runner/test-proto.c)
 * over generated inputs with the normal compiler.  Any decoded message is
 * re-encoded and decoded again, and the two must agree.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

int hsr_fuzz_frames(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_roundtrip(const struct hsr_msg *m, int from_daemon)
{
	struct hsr_buf b;
	struct hsr_decoder d;
	struct hsr_frame f;
	struct hsr_msg m2;

	hsr_buf_init(&b);
	hsr_msg_encode(&b, m, from_daemon);
	hsr_decoder_init(&d, 0);
	if (b.failed || hsr_decoder_feed(&d, b.data, b.len) < 0 || hsr_decoder_next(&d, &f) != 1)
		abort();
	if (hsr_msg_decode(&f, from_daemon, &m2) < 0)
		abort();
	if (m2.type != m->type || m2.id != m->id || m2.stream != m->stream ||
	    m2.offset != m->offset || m2.value != m->value || m2.vmin != m->vmin ||
	    m2.vmax != m->vmax || m2.code != m->code || m2.signo != m->signo ||
	    m2.flags != m->flags || m2.mode != m->mode || m2.exit_code != m->exit_code ||
	    m2.len != m->len || m2.str_len != m->str_len || m2.count != m->count ||
	    memcmp(m2.dropped, m->dropped, sizeof(m->dropped)) ||
	    memcmp(m2.total, m->total, sizeof(m->total)) ||
	    (m->len && memcmp(m2.data, m->data, m->len)) ||
	    (m->str_len && memcmp(m2.str, m->str, m->str_len)))
		abort();
	hsr_decoder_free(&d);
	hsr_buf_free(&b);
}

int hsr_fuzz_frames(const uint8_t *data, size_t size)
{
	struct hsr_decoder d;
	struct hsr_frame f;
	size_t pos = 0, step;
	int rc;

	if (size == 0)
		return 0;
	/* The first byte picks the feed size, so frames split at every
	 * possible boundary get exercised. */
	step = (size_t)data[0] % 17 + 1;
	hsr_decoder_init(&d, 1u << 16);
	while (pos < size) {
		size_t n = size - pos < step ? size - pos : step;

		if (hsr_decoder_feed(&d, data + pos, n) < 0)
			break;
		pos += n;
		while ((rc = hsr_decoder_next(&d, &f)) == 1) {
			for (int from_daemon = 0; from_daemon < 2; from_daemon++) {
				struct hsr_msg m;

				if (hsr_msg_decode(&f, from_daemon, &m) < 0)
					continue;
				if (m.type == HSR_F_EXEC) {
					free(hsr_exec_decode(m.data, m.len));
					continue;
				}
				if (m.type == HSR_F_ATTACH && from_daemon) {
					struct hsr_attach_entry e;

					for (uint32_t i = 0; i < m.count; i++)
						hsr_attach_entry_decode(&m, i, &e);
				}
				check_roundtrip(&m, from_daemon);
			}
		}
		if (rc < 0)
			break;
	}
	hsr_decoder_free(&d);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return hsr_fuzz_frames(data, size);
}
