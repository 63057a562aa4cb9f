/* SPDX-License-Identifier: MIT */
/*
 * run-pty.c - `hs run --pty`: a terminal pass-through for a person.  The
 * local terminal goes raw while the command runs (restored on every way
 * out, signals included), keystrokes go to the sandbox's terminal through
 * the stdin gate (a refused line is not delivered: its line is erased
 * there and a one-line notice goes to stderr), and SIGWINCH resizes it.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "core/cli/run-pty.h"
#include "core/core.h"

/* What the signal handlers need: set before any is installed. */
static struct termios saved_tty, raw_tty;
static volatile sig_atomic_t tty_raw;
static int winch_pipe[2] = { -1, -1 };
static int pty_cancel_fd = -1;

static void
restore_tty(void)
{
	if (tty_raw) {
		tcsetattr(0, TCSAFLUSH, &saved_tty);
		tty_raw = 0;
	}
}

static void
on_winch(int sig)
{
	int saved = errno;
	char c = (char)sig;
	if (write(winch_pipe[1], &c, 1) < 0) {
		/* A change is already pending. */
	}
	errno = saved;
}

/* TERM, HUP, QUIT, INT (from kill; Ctrl-C is a keystroke now): the terminal is put back at once (tcsetattr is
 * async-signal-safe), and the command is cancelled. */
static void
on_stop(int sig)
{
	int saved = errno;
	char c = (char)sig;
	restore_tty();
	if (pty_cancel_fd >= 0 && write(pty_cancel_fd, &c, 1) < 0) {
		/* A cancel is already pending. */
	}
	errno = saved;
}

static void
window_size(uint16_t *rows, uint16_t *cols)
{
	struct winsize ws = { 0 };
	if (ioctl(0, TIOCGWINSZ, &ws) < 0 || !ws.ws_row || !ws.ws_col)
		ws = (struct winsize){ .ws_row = HS_PTY_ROWS, .ws_col = HS_PTY_COLS };
	*rows = ws.ws_row > 1000 ? 1000 : ws.ws_row;
	*cols = ws.ws_col > 1000 ? 1000 : ws.ws_col;
}

int
hs_run_pty_begin(struct hs_run_pty *p, int cancel_fd, uint16_t *rows, uint16_t *cols)
{
	memset(p, 0, sizeof(*p));
	if (!isatty(0)) {
		hs_die_msg("--pty needs a terminal on stdin: run it from one, or drop --pty");
		return -1;
	}
	if (tcgetattr(0, &saved_tty) < 0 || pipe2(winch_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
		hs_die_msg("--pty: cannot set up the terminal: %s", strerror(errno));
		return -1;
	}
	p->guard = hs_stdin_guard_new();
	if (!p->guard) {
		hs_die_msg("out of memory");
		return -1;
	}
	pty_cancel_fd = cancel_fd;
	window_size(rows, cols);
	atexit(restore_tty);
	return 0;
}

void
hs_run_pty_end(struct hs_run_pty *p)
{
	restore_tty();
	signal(SIGWINCH, SIG_DFL);
	hs_stdin_guard_free(p->guard);
	p->guard = NULL;
}

long
hs_run_pty_input(struct hs_run_pty *p, void *buf, size_t len)
{
	ssize_t n;
	do
		n = read(0, buf, len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EAGAIN ? -1 : 0;
	if (n == 0)
		return 0;
	struct hs_approval_out v = { .decision = NULL };
	/* An approval asked on this terminal needs it as a person left it. */
	if (tty_raw)
		tcsetattr(0, TCSANOW, &saved_tty);
	int allowed = hs_session_stdin_gate(p->s, p->guard, "pty", buf, (size_t)n, &v);
	if (tty_raw)
		tcsetattr(0, TCSANOW, &raw_tty);
	if (allowed)
		return (long)n;
	/* Refused: not delivered.  What was typed before it is erased there
	 * (^U), so the line cannot be sent by a later Enter either. */
	char msg[1200];
	int m = snprintf(msg, sizeof(msg), "\r\nhs: input refused: %s\r\n", v.why);
	if (m > 0 && write(2, msg, (size_t)m < sizeof(msg) ? (size_t)m : sizeof(msg) - 1) < 0) {
		/* stderr is gone; the input is refused all the same. */
	}
	static const char kill_line = 0x15;
	if (!hs_session_stdin_gate(p->s, p->guard, "pty", &kill_line, 1, &v))
		return -1;
	memcpy(buf, &kill_line, 1);
	return 1;
}

int
hs_run_pty_winch_fd(void)
{
	return winch_pipe[0];
}

int
hs_run_pty_resize(struct hs_run_pty *p, uint16_t *rows, uint16_t *cols)
{
	(void)p;
	char drain[64];
	int changed = 0;
	while (read(winch_pipe[0], drain, sizeof(drain)) > 0)
		changed = 1;
	if (changed)
		window_size(rows, cols);
	return changed;
}

void
hs_run_pty_running(void *ctx, int on)
{
	(void)ctx;
	if (!on) {
		restore_tty();
		return;
	}
	struct sigaction sa = { .sa_handler = on_stop };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGQUIT, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = on_winch;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGWINCH, &sa, NULL);
	/* Ctrl-C and the rest are keystrokes for the sandbox's terminal now. */
	raw_tty = saved_tty;
	cfmakeraw(&raw_tty);
	if (tcsetattr(0, TCSAFLUSH, &raw_tty) == 0)
		tty_raw = 1;
}
