/* SPDX-License-Identifier: MIT */
/*
 * prompt.h - showing a command to a person and reading their answer.
 */
#ifndef HS_SAFETY_PROMPT_H
#define HS_SAFETY_PROMPT_H

#include <stddef.h>

enum hs_answer {
	HS_ANSWER_INVALID = -1,
	HS_ANSWER_ONCE = 0,
	HS_ANSWER_SESSION = 1,
	HS_ANSWER_ALWAYS = 2,
	HS_ANSWER_DENY = 3,
};

/*
 * Write in[0..inlen) to out (NUL-terminated, truncated to outlen) so that a
 * terminal shows exactly the bytes that would run: control characters as
 * \n, \t, \r, \x1b ..., invalid UTF-8 as \xNN, backslash as \\, and the
 * Unicode controls that reorder or hide text (bidi overrides, zero-width
 * characters, C1 controls) as \uXXXX.  Returns the length written.
 */
size_t hs_prompt_escape(const char *in, size_t inlen, char *out, size_t outlen);
/* Parse o|once|s|session|a|always|d|deny (case-insensitive, surrounding blanks ignored). */
enum hs_answer hs_prompt_parse_answer(const char *s);
/* "once", "session", "always", "deny" or "invalid". */
const char *hs_answer_name(enum hs_answer a);

#endif
