/* SPDX-License-Identifier: MIT */
/*
 * pbcheck.c - the hand-written protobuf encoder and decoder against protoc:
 *   pbcheck encode NAME   writes message NAME, built with pb.c, to stdout
 *                         (pb.test decodes it with protoc --decode)
 *   pbcheck decode [N]    reads a message (from protoc --encode) and prints
 *                         its fields as "num wire value" lines, nested
 *                         messages by their known field numbers
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/modal/pb.h"

static unsigned nested; /* a field number at depth 0 holding a message */

static int
dump(const uint8_t *p, size_t n, int depth)
{
	struct pb_reader r;
	struct pb_field f;
	int rc;
	pb_reader_init(&r, p, n);
	while ((rc = pb_next(&r, &f)) > 0) {
		printf("%*s%u %u ", depth * 2, "", f.num, f.wire);
		if (f.wire == 2) {
			if (depth == 0 && f.num == nested) {
				printf("{\n");
				if (dump(f.p, f.n, depth + 1) < 0)
					return -1;
				printf("%*s}\n", depth * 2, "");
			} else {
				putchar('"');
				fwrite(f.p, 1, f.n, stdout);
				printf("\"\n");
			}
		} else {
			printf("%llu\n", (unsigned long long)f.v);
		}
	}
	return rc;
}

int
main(int argc, char **argv)
{
	struct pb_buf b = { 0 }, s = { 0 }, s2 = { 0 };
	if (argc >= 2 && strcmp(argv[1], "decode") == 0) {
		nested = argc > 2 ? (unsigned)atoi(argv[2]) : 0;
		uint8_t buf[65536];
		size_t n = fread(buf, 1, sizeof(buf), stdin);
		return dump(buf, n, 0) < 0 ? 1 : 0;
	}
	if (argc != 3)
		return 2;
	const char *m = argv[2];
	if (strcmp(m, "SandboxCreateRequest") == 0) {
		pb_str_rep(&s, 1, "sleep");
		pb_str_rep(&s, 1, "infinity");
		pb_str(&s, 3, "im-1");
		pb_uint(&s2, 2, 512);
		pb_uint(&s2, 3, 1500);
		pb_msg(&s, 5, &s2);
		pb_uint(&s, 7, 3600);
		pb_bool(&s, 11, 1);
		pb_str(&b, 1, "ap-1");
		pb_msg(&b, 2, &s);
		pb_str(&b, 3, "");
	} else if (strcmp(m, "TaskExecStartRequest") == 0) {
		pb_str(&b, 1, "ta-1");
		pb_str(&b, 2, "hs-x-1");
		pb_str_rep(&b, 3, "/bin/sh");
		pb_str_rep(&b, 3, "");
		pb_str_rep(&b, 3, "caf\xc3\xa9 \"q\"");
		pb_uint(&b, 4, 1);
		pb_uint(&b, 5, 1);
		pb_varint(&b, 6, 3);
	} else if (strcmp(m, "TaskExecStdinWriteRequest") == 0) {
		pb_str(&b, 1, "ta-1");
		pb_str(&b, 2, "hs-x-1");
		pb_uint(&b, 3, 1048576);
		pb_bytes(&b, 4, "a\0b\n", 4);
		pb_bool(&b, 5, 1);
	} else if (strcmp(m, "TaskExecStdioReadRequest") == 0) {
		pb_str(&b, 1, "ta-1");
		pb_str(&b, 2, "hs-x-1");
		pb_uint(&b, 3, 300);
		pb_uint(&b, 4, 1);
	} else if (strcmp(m, "SandboxGetTaskIdRequest") == 0) {
		pb_str(&b, 1, "sb-1");
		pb_float(&b, 2, 10.0f);
	} else if (strcmp(m, "ImageGetOrCreateRequest") == 0) {
		pb_str_rep(&s, 6, "FROM debian:bookworm-slim");
		pb_msg(&b, 2, &s);
		pb_str(&b, 4, "ap-1");
	} else {
		return 2;
	}
	fwrite(b.data, 1, b.len, stdout);
	pb_buf_free(&b);
	pb_buf_free(&s);
	pb_buf_free(&s2);
	return 0;
}
