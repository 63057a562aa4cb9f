/* SPDX-License-Identifier: MIT */
/*
 * run-pty.h - `hs run --pty`: the local terminal passed through to a PTY
 * command (raw mode, keystrokes through the stdin gate, SIGWINCH).
 */
#ifndef HS_RUN_PTY_H
#define HS_RUN_PTY_H

#include <stddef.h>
#include <stdint.h>

#include "core/pipeline.h"

struct hs_run_pty {
	struct hs_session *s;         /* whose gate judges the keystrokes; set before input */
	struct hs_stdin_guard *guard;
};

/* Check that stdin is a terminal and take its size; cancel_fd gets a byte on
 * TERM, HUP or QUIT.  0, or -1 after a one-line message. */
int hs_run_pty_begin(struct hs_run_pty *p, int cancel_fd, uint16_t *rows, uint16_t *cols);
/* Restore the terminal and free p. */
void hs_run_pty_end(struct hs_run_pty *p);
/* A sink's input: keystrokes that passed the gate (-1: none ready, 0: EOF). */
long hs_run_pty_input(struct hs_run_pty *p, void *buf, size_t len);
/* Readable after a SIGWINCH; hs_run_pty_resize then says the new size (1) or 0. */
int hs_run_pty_winch_fd(void);
int hs_run_pty_resize(struct hs_run_pty *p, uint16_t *rows, uint16_t *cols);
/* A request's running callback: raw mode and the signal handlers (1), restored (0). */
void hs_run_pty_running(void *ctx, int on);

#endif /* HS_RUN_PTY_H */
