/* SPDX-License-Identifier: MIT */
/* The session shell: one persistent bash per runner daemon (hs-runner(7),
 * "Session shell").
 *
 * The shell reads its program from a socket only the daemon writes.  Each
 * command is fed as the reference terminal would see it, at top level:
 *
 *     exec <IN >OUT 2>ERR; ...; { . RET STATUS LAST; } 2>NULL && ...
 *     COMMAND
 *     { printf RECORD >|DONE; set +x; } 2>NULL; exec <NULL >NULL 2>&1
 *
 * The first line gives the command its own streams (FIFOs in the runtime
 * directory, which the daemon reads like a shim's pipes) and restores $?
 * and $_; the last writes the record ($?, $_, $-, $PWD) that says the
 * command is done and hands the streams back.  Bookkeeping runs inside
 * `{ ...; } 2>NULL` groups, so `set -x` never traces it, and quoted
 * `\builtin` names, so an alias or a function of the agent's cannot take
 * it over.  Bash moves its program input to a high, close-on-exec
 * descriptor at the first `exec <`, so commands see only 0, 1 and 2.
 *
 * An EXIT trap (RUNDIR/sh.x) writes the shell's whole state when the shell
 * goes (exit, set -e, a syntax error, TERM at a deadline); the next shell
 * is started from it.  A shell that goes without it (kill -9, exec) is
 * restarted fresh, and the command's EXIT says so.
 */
#include "daemon.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef SIOCOUTQ
#define SIOCOUTQ TIOCOUTQ
#endif

/* How often a running command is checked for a program left incomplete
 * (an open quote or heredoc: bash then waits for more of its input). */
#define INCOMPLETE_CHECK_MS 100
/* How long past the grace a stopped shell may take to save its state. */
#define SHELL_SAVE_MS 5000
/* Bounded log of what background jobs write after their command ended. */
#define JOBLOG_MAX (8u * 1024u * 1024u)

struct joblog {
	struct joblog *next;
	int fd;     /* the pipe, read until every holder is gone */
	int logfd;  /* RUNDIR/job-N.S.log, or -1 */
	uint64_t size;
};

/* The processes a completed command left running (its background jobs):
 * the top ones (children of the shell or of the daemon) by pid and start
 * time, so a reused pid is never taken for them. */
#define BGJOB_TOPS 32
#define BGJOBS_MAX 64
struct bgjob {
	struct bgjob *next;
	uint64_t id;
	char command[256];
	int n;
	pid_t pid[BGJOB_TOPS];
	unsigned long long start[BGJOB_TOPS];
	int64_t kill_at;       /* a job kill: KILL what is left at this time */
};

struct hsr_shell {
	pid_t pid;             /* bash; 0 when none runs */
	int in_fd;             /* our end of bash's program socket */
	int base_fd[3];        /* read ends of bash's own stdout (1) and stderr (2): what
	                          it writes outside a command's group (an EXIT trap at
	                          exit, a parse error) belongs to the running command */
	unsigned long in_ino;
	struct hsr_buf feed;
	size_t feed_pos;
	int rec_fd;            /* read end of the record FIFO awaited; -1 none */
	char rec_name[40];
	struct hsr_buf rec;
	int initing;           /* the start-up record is awaited */
	int initing_failed_once; /* a shell died before its start-up record */
	struct hsr_cmd *cur;   /* the foreground command */
	/* What the last record said. */
	int status;
	int xtrace;
	char *under;           /* $_ */
	char *pwd;
	int agent_exit_trap;   /* the session set an EXIT trap of its own (agent_trap) */
	char *agent_trap;      /* its `trap -- '...' EXIT` line; the trap itself is in sh.xt,
	                          which ours runs after saving the state */
	int trap_query;        /* the running command may have changed the EXIT trap */
	/* Starting a shell. */
	char *prog;
	char **env;
	char *start_dir;
	char null_path[4200];
	/* The running command. */
	unsigned long long start_tick;
	int64_t deadline;
	int killing;
	int64_t kill_at;
	int64_t next_check;
	int incomplete_sent;
	int died;              /* the shell went while the command ran */
	int died_status;
	int trap_predump;      /* the state was saved as a trap-setting command began */
	char lost[200];        /* why state was lost, for the next EXIT */
	struct joblog *logs;
	struct hsr_buf last_a, last_b; /* sh.a and sh.b as last written */
	struct bgjob *jobs;    /* newest first */
	/* Bumped whenever the shell's descriptors change (a new record FIFO, a
	 * shell gone or started): poll slots taken before are stale, since a
	 * closed descriptor's number may already name a new one. */
	unsigned gen, poll_gen;
};

static char *xstrdup(const char *s)
{
	return strdup(s ? s : "");
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Appends s single-quoted for the shell. */
static void put_sq(struct hsr_buf *b, const char *s)
{
	hsr_buf_put(b, "'", 1);
	for (; *s; s++) {
		if (*s == '\'')
			hsr_buf_put(b, "'\\''", 4);
		else
			hsr_buf_put(b, s, 1);
	}
	hsr_buf_put(b, "'", 1);
}

static void put_s(struct hsr_buf *b, const char *s)
{
	hsr_buf_put(b, s, strlen(s));
}

void hsr_put_sq(struct hsr_buf *b, const char *s)
{
	put_sq(b, s);
}

void hsr_put_s(struct hsr_buf *b, const char *s)
{
	put_s(b, s);
}

/* Appends the quoted path RUNDIR/name. */
static void put_path(struct hsr_daemon *d, struct hsr_buf *b, const char *name)
{
	char p[4200];

	snprintf(p, sizeof(p), "%s/%s", d->rd->path, name);
	put_sq(b, p);
}

static unsigned long long now_ticks(void)
{
	struct timespec ts;
	long hz = sysconf(_SC_CLK_TCK);

	if (hz <= 0)
		hz = 100;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (unsigned long long)ts.tv_sec * (unsigned long long)hz +
	       (unsigned long long)ts.tv_nsec / (1000000000ull / (unsigned long long)hz);
}

/* ---- processes ---- */

static int is_shim(struct hsr_daemon *d, pid_t pid)
{
	for (struct hsr_cmd *c = d->cmds; c; c = c->next)
		if (c->shim == pid && c->shim > 0)
			return 1;
	return 0;
}

/*
 * The processes of the running command: below the shell, or orphans the
 * daemon adopted, whose top ancestor (the shell's or the daemon's child)
 * started when the command did or later.  Background jobs of earlier
 * commands, and what they start, are not the command's.  With all set,
 * every process below the daemon except shims' trees (session close).
 * Sends sig to each (0: only counts).  Returns how many.
 */
static int signal_cmd_procs(struct hsr_daemon *d, int sig, int all)
{
	struct hsr_shell *sh = d->shell;
	pid_t self = getpid();
	struct hsr_proc *t;
	int n = hsr_proc_table(&t), hits = 0;

	for (int i = 0; i < n; i++) {
		struct hsr_proc *p = &t[i], *top = NULL;
		int depth = 0, under_daemon = 0;

		if (p->pid == self || (sh && p->pid == sh->pid))
			continue;
		for (struct hsr_proc *q = p; q && depth < 4096; depth++) {
			if (q->ppid == self || (sh && sh->pid > 0 && q->ppid == sh->pid)) {
				top = q;
				under_daemon = 1;
				break;
			}
			q = hsr_proc_find(t, n, q->ppid);
		}
		if (!under_daemon || !top || is_shim(d, top->pid))
			continue;
		if (!all && top->start < sh->start_tick)
			continue;
		if (sig == 0 || kill(p->pid, sig) == 0)
			hits++;
	}
	free(t);
	return hits;
}

/* Records the top processes of the running command (see signal_cmd_procs)
 * as a background job. */
static void record_job(struct hsr_daemon *d, struct hsr_cmd *cmd)
{
	struct hsr_shell *sh = d->shell;
	pid_t self = getpid();
	struct hsr_proc *t;
	int n = hsr_proc_table(&t), count = 0;
	struct bgjob *j = calloc(1, sizeof(*j));

	if (!j || n < 0) {
		free(j);
		free(t);
		return;
	}
	j->id = cmd->id;
	snprintf(j->command, sizeof(j->command), "%s", cmd->req ? cmd->req->argv[1] : "");
	for (int i = 0; i < n && j->n < BGJOB_TOPS; i++) {
		struct hsr_proc *p = &t[i];

		if (p->pid == self || p->pid == sh->pid || is_shim(d, p->pid))
			continue;
		if ((p->ppid == self || (sh->pid > 0 && p->ppid == sh->pid)) && p->start >= sh->start_tick) {
			j->pid[j->n] = p->pid;
			j->start[j->n++] = p->start;
		}
	}
	free(t);
	if (j->n == 0) {
		free(j);
		return;
	}
	j->next = sh->jobs;
	sh->jobs = j;
	/* Bounded: the oldest beyond the limit are forgotten (not killed). */
	for (struct bgjob *q = sh->jobs; q; q = q->next)
		if (++count == BGJOBS_MAX) {
			while (q->next) {
				struct bgjob *x = q->next;

				q->next = x->next;
				free(x);
			}
			break;
		}
}

/* Signals (sig 0: counts) every live process of job j: its top processes
 * and everything below them.  Returns how many. */
static int job_procs(struct bgjob *j, int sig)
{
	struct hsr_proc *t;
	int n = hsr_proc_table(&t), hits = 0;

	for (int i = 0; i < n; i++) {
		int depth = 0, mine = 0;

		for (struct hsr_proc *q = &t[i]; q && depth < 4096 && !mine; depth++) {
			for (int k = 0; k < j->n; k++)
				if (q->pid == j->pid[k] && q->start == j->start[k])
					mine = 1;
			if (q->ppid <= 1)
				break;
			q = hsr_proc_find(t, n, q->ppid);
		}
		if (mine && (sig == 0 || kill(t[i].pid, sig) == 0))
			hits++;
	}
	free(t);
	return hits;
}

static uint64_t log_size(struct hsr_daemon *d, uint64_t id, int s)
{
	char name[64];
	struct stat st;

	snprintf(name, sizeof(name), "job-%llu.%s.log", (unsigned long long)id, s == 1 ? "out" : "err");
	return fstatat(d->rd->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 ? (uint64_t)st.st_size : 0;
}

void hsr_shell_jobs(struct hsr_daemon *d, struct hsr_conn *c, uint64_t token)
{
	struct hsr_msg m = { .type = HSR_F_JOBS, .value = token };
	struct hsr_buf list;

	hsr_buf_init(&list);
	for (struct bgjob *j = d->shell ? d->shell->jobs : NULL; j; j = j->next) {
		struct hsr_job_entry e = { .id = j->id, .command = j->command,
					   .command_len = (uint32_t)strlen(j->command) };

		e.procs = (uint32_t)job_procs(j, 0);
		e.alive = e.procs > 0;
		e.log_bytes[1] = log_size(d, j->id, 1);
		e.log_bytes[2] = log_size(d, j->id, 2);
		hsr_jobs_entry_encode(&list, &e);
		m.count++;
	}
	if (list.failed) {
		hsr_conn_error(c, 0, HSR_E_LIMIT, "out of memory");
	} else {
		m.data = list.data;
		m.len = list.len;
		hsr_msg_encode(&c->out, &m, 1);
	}
	hsr_buf_free(&list);
}

void hsr_shell_job_signal(struct hsr_daemon *d, struct hsr_conn *c, uint64_t id, int sig)
{
	struct hsr_msg ok = { .type = HSR_F_OK, .id = id };
	struct bgjob *j = NULL;

	for (j = d->shell ? d->shell->jobs : NULL; j; j = j->next)
		if (j->id == id)
			break;
	if (!j || sig < 0 || sig >= 65 || job_procs(j, 0) == 0) {
		hsr_conn_error(c, id, HSR_E_NOENT, "no command or running job with id %llu",
			       (unsigned long long)id);
		return;
	}
	job_procs(j, sig);
	if (sig == SIGTERM) {
		job_procs(j, SIGCONT);
		j->kill_at = hsr_now_ms() + HSR_DEFAULT_GRACE_MS;
	}
	hsr_msg_encode(&c->out, &ok, 1);
}

/* Returns 1 when pid's children file (/proc/PID/task/PID/children) lists
 * a process other than skip and the shims, 0 when it lists none, -1 when it
 * cannot be read. */
static int has_children(struct hsr_daemon *d, pid_t pid, pid_t skip)
{
	char path[80], buf[4096], *p, *end;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return -1;
	if ((size_t)n == sizeof(buf) - 1)
		return 1;
	buf[n] = '\0';
	for (p = buf;; p = end) {
		long c = strtol(p, &end, 10);

		if (end == p)
			return 0;
		if (c > 0 && c != skip && !is_shim(d, (pid_t)c))
			return 1;
	}
}

/* How many processes the command left running: 0 at once when neither
 * the shell nor the daemon has a child of its own (the common case);
 * else the walk of /proc. */
static int count_left(struct hsr_daemon *d)
{
	struct hsr_shell *sh = d->shell;

	if (sh->pid > 0 && has_children(d, sh->pid, 0) == 0 &&
	    has_children(d, getpid(), sh->pid) == 0)
		return 0;
	return signal_cmd_procs(d, 0, 0);
}

/* ---- job logs ---- */

void hsr_shell_keep_pipe(struct hsr_daemon *d, struct hsr_cmd *cmd, int s)
{
	struct joblog *j;
	char name[64];

	if (!d->shell || cmd->pipe_fd[s] < 0)
		return;
	j = calloc(1, sizeof(*j));
	if (!j) {
		close_fd(&cmd->pipe_fd[s]);
		return;
	}
	j->fd = cmd->pipe_fd[s];
	cmd->pipe_fd[s] = -1;
	snprintf(name, sizeof(name), "job-%llu.%s.log", (unsigned long long)cmd->id,
		 s == 1 ? "out" : "err");
	j->logfd = openat(d->rd->dirfd, name, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC,
			  0600);
	j->next = d->shell->logs;
	d->shell->logs = j;
}

static void joblog_read(struct joblog *j)
{
	char buf[16384];
	ssize_t n = read(j->fd, buf, sizeof(buf));

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		close_fd(&j->fd);
		return;
	}
	if (j->logfd >= 0 && j->size + (uint64_t)n <= JOBLOG_MAX &&
	    write(j->logfd, buf, (size_t)n) == n)
		j->size += (uint64_t)n;
}

/* ---- the shell process ---- */

static const char ret_file[] = "\\builtin return \"$1\"\n";

/* The dump (sh.d): the whole state, as commands, into RUNDIR/target
 * (sh.saved; sh.pty for a terminal command's shell).  The variables it
 * uses are set after `declare -p` ran. */
static void put_dump_file(struct hsr_daemon *d, struct hsr_buf *b, const char *target)
{
	put_s(b, "{ \\builtin printf '#%s\\n' \"$?\"; \\builtin declare -p; \\builtin declare -f; \\builtin alias -p; "
		 "\\builtin trap -p; \\builtin umask -p; \\builtin shopt -p; "
		 "\\builtin printf '\\\\builtin cd -- %q\\n' \"$PWD\"; "
		 "while IFS= \\builtin read -r __hs_o; do __hs_f=${__hs_o##*\\(}; __hs_f=${__hs_f%%\\)*}; "
		 "\\builtin printf '\\\\builtin ulimit -S -%s %s\\n' \"${__hs_f##*-}\" \"${__hs_o##* }\"; "
		 "done <<<\"$(\\builtin ulimit -S -a)\"; "
		 "for ((__hs_i=${#DIRSTACK[@]}-1; __hs_i>0; __hs_i--)); do "
		 "\\builtin printf '\\\\builtin pushd -n -- %q\\n' \"$(\\builtin dirs -l +$__hs_i)\"; done; "
		 "\\builtin printf '\\\\builtin set --'; \\builtin printf ' %q' \"$@\"; "
		 "\\builtin printf '\\n'; \\builtin set +o; \\builtin printf '#end\\n'; } >|");
	put_path(d, b, target);
	put_s(b, " 2>/dev/null\n");
}

/* The EXIT trap's file (sh.x): the dump, then the session's own EXIT trap. */
static void put_exit_file(struct hsr_daemon *d, struct hsr_buf *b)
{
	put_s(b, "\\builtin . ");
	put_path(d, b, "sh.d");
	put_s(b, "\n");
	/* Then the session's own EXIT trap, if it set one, with $? as at exit
	 * (sh.xt puts it back from its argument before the trap's code). */
	put_s(b, "{ [ -r ");
	put_path(d, b, "sh.xt");
	put_s(b, " ] && \\builtin read -r __hs_st <");
	put_path(d, b, "sh.saved");
	put_s(b, "; } 2>/dev/null && \\builtin . ");
	put_path(d, b, "sh.xt");
	put_s(b, " \"${__hs_st#\\#}\"\n");
}

static int write_file(struct hsr_daemon *d, const char *name, const void *p, size_t n)
{
	int fd = openat(d->rd->dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
			0600);
	int rc = 0;

	if (fd < 0)
		return -1;
	if (write(fd, p, n) != (ssize_t)n)
		rc = -1;
	close(fd);
	return rc;
}

/* Writes name unless it already holds what *now does (the file as last
 * written is kept in *last), so a run of alike commands writes nothing. */
static int write_cached(struct hsr_daemon *d, const char *name, struct hsr_buf *last,
			const struct hsr_buf *now)
{
	if (last->len == now->len && !last->failed && (now->len == 0 || memcmp(last->data, now->data, now->len) == 0))
		return 0;
	last->len = 0;
	last->failed = 0;
	if (write_file(d, name, now->data, now->len) < 0)
		return -1;
	hsr_buf_put(last, now->data, now->len);
	return 0;
}

/* The record FIFO of the next step; returns 0 or -1. */
static int open_record(struct hsr_daemon *d, struct hsr_shell *sh)
{
	struct stat st;

	/* One FIFO, opened afresh for each record (only the shell writes it,
	 * and each record is read to its end). */
	sh->gen++;
	close_fd(&sh->rec_fd);
	snprintf(sh->rec_name, sizeof(sh->rec_name), "sh.rec");
	if (mkfifoat(d->rd->dirfd, sh->rec_name, 0600) < 0 && errno != EEXIST)
		return -1;
	sh->rec_fd = openat(d->rd->dirfd, sh->rec_name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	sh->rec.len = 0;
	if (sh->rec_fd >= 0 && (fstat(sh->rec_fd, &st) < 0 || !S_ISFIFO(st.st_mode))) {
		close_fd(&sh->rec_fd);
		errno = EINVAL;
	}
	return sh->rec_fd < 0 ? -1 : 0;
}

/* The record: $?, $_, $-, $PWD, each NUL-terminated. */
static void put_record(struct hsr_daemon *d, struct hsr_shell *sh, struct hsr_buf *b,
		       const char *status)
{
	put_s(b, "{ \\builtin printf '%s\\0' ");
	put_s(b, status);
	put_s(b, " \"$_\" \"$-\" \"${PWD-}\"");
	/* After a command that may have set one: the EXIT trap, so the
	 * agent's own is known (a command substitution sees the shell's). */
	if (sh->trap_query)
		put_s(b, " \"$(\\builtin trap -p EXIT)\"");
	put_s(b, " >|");
	put_path(d, b, sh->rec_name);
	put_s(b, "; \\builtin set +x; } 2>");
	put_sq(b, sh->null_path);
}

static void put_trap(struct hsr_daemon *d, struct hsr_buf *b)
{
	struct hsr_buf t;

	hsr_buf_init(&t);
	put_s(&t, "\\builtin . ");
	put_path(d, &t, "sh.x");
	put_s(b, "{ \\builtin trap -- ");
	hsr_buf_put(&t, "", 1);
	put_sq(b, t.failed ? "" : (const char *)t.data);
	put_s(b, " EXIT; } 2>/dev/null; ");
	hsr_buf_free(&t);
}

enum { SAVED_NONE, SAVED_AT_EXIT, SAVED_BEFORE };

/* Whether sh.saved holds a whole state: the dump ends it with "#end", and
 * one taken as a command began (see feed_cmd) has "#pre" after that. */
static int saved_state(struct hsr_daemon *d)
{
	int fd = openat(d->rd->dirfd, "sh.saved", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	char tail[11] = "";
	off_t sz;
	ssize_t n;

	if (fd < 0)
		return SAVED_NONE;
	sz = lseek(fd, 0, SEEK_END);
	n = sz >= 10 ? pread(fd, tail, 10, sz - 10) : sz >= 5 ? pread(fd, tail, 5, sz - 5) : -1;
	close(fd);
	if (n == 10 && memcmp(tail, "#end\n#pre\n", 10) == 0)
		return SAVED_BEFORE;
	if (n >= 5 && memcmp(tail + n - 5, "#end\n", 5) == 0)
		return SAVED_AT_EXIT;
	return SAVED_NONE;
}

static void shell_reset(struct hsr_shell *sh)
{
	sh->gen++;
	close_fd(&sh->in_fd);
	close_fd(&sh->base_fd[1]);
	close_fd(&sh->base_fd[2]);
	sh->feed.len = 0;
	sh->feed_pos = 0;
	sh->pid = 0;
	sh->initing = 0;
}

/* Starts bash and feeds its start-up: the saved state when there is one,
 * our EXIT trap, and a record of its flags.  Returns 0 or -1 with errno. */
static int shell_start(struct hsr_daemon *d, struct hsr_shell *sh)
{
	int sv[2];
	struct stat st;
	int restore = 0;
	pid_t pid;

	restore = saved_state(d) != SAVED_NONE;
	int bo[2], be[2];

	if (pipe2(bo, O_CLOEXEC) < 0)
		return -1;
	if (pipe2(be, O_CLOEXEC) < 0) {
		close(bo[0]);
		close(bo[1]);
		return -1;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		close(bo[0]);
		close(bo[1]);
		close(be[0]);
		close(be[1]);
		return -1;
	}
	if (fstat(sv[1], &st) == 0)
		sh->in_ino = (unsigned long)st.st_ino;
	/* The shell only reads: what a command writes there goes nowhere. */
	shutdown(sv[0], SHUT_RD);
	shutdown(sv[1], SHUT_WR);
	pid = fork();
	if (pid < 0) {
		close(sv[0]);
		close(sv[1]);
		close(bo[0]);
		close(bo[1]);
		close(be[0]);
		close(be[1]);
		return -1;
	}
	if (pid == 0) {
		char *argv[] = { "bash", "--norc", "--noprofile", NULL };
		sigset_t none;

		hsr_wipe(d->key, sizeof(d->key));
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		signal(SIGCHLD, SIG_DFL);
		setsid();
		if (dup2(sv[1], 0) < 0 || dup2(bo[1], 1) < 0 || dup2(be[1], 2) < 0)
			_exit(126);
		hsr_close_others(NULL, 0);
		umask(022);
		if (!sh->start_dir[0] || chdir(sh->start_dir) < 0) {
			const char *home = NULL;

			for (char **e = sh->env; e && *e; e++)
				if (strncmp(*e, "HOME=", 5) == 0)
					home = *e + 5;
			if (!home || chdir(home) < 0)
				(void)!chdir("/");
		}
		execve(sh->prog, argv, sh->env);
		_exit(127);
	}
	close(sv[1]);
	close(bo[1]);
	close(be[1]);
	sh->base_fd[1] = bo[0];
	sh->base_fd[2] = be[0];
	fcntl(bo[0], F_SETFL, O_NONBLOCK);
	fcntl(be[0], F_SETFL, O_NONBLOCK);
	sh->in_fd = sv[0];
	fcntl(sh->in_fd, F_SETFL, O_NONBLOCK);
	sh->pid = pid;
	sh->initing = 1;
	sh->xtrace = 0;
	if (!restore) {
		/* A fresh shell has no trap of the session's. */
		sh->agent_exit_trap = 0;
		free(sh->agent_trap);
		sh->agent_trap = NULL;
		unlinkat(d->rd->dirfd, "sh.xt", 0);
	}
	if (open_record(d, sh) < 0)
		return -1;
	sh->feed.len = 0;
	sh->feed_pos = 0;
	if (restore) {
		put_s(&sh->feed, "{ \\builtin . ");
		put_path(d, &sh->feed, "sh.saved");
		put_s(&sh->feed, "; } 2>/dev/null\n");
	}
	put_s(&sh->feed, "{ \\builtin unset ${!HS_*}; } 2>/dev/null\n");
	put_trap(d, &sh->feed);
	put_record(d, sh, &sh->feed, "0");
	put_s(&sh->feed, "\n");
	if (!restore && !sh->lost[0] && sh->died)
		snprintf(sh->lost, sizeof(sh->lost), "the shell ended without saving its state");
	if (!restore)
		unlinkat(d->rd->dirfd, "sh.saved", 0);
	return sh->feed.failed ? -1 : 0;
}

static int shell_init(struct hsr_daemon *d, const struct hsr_exec_req *req)
{
	struct hsr_shell *sh = calloc(1, sizeof(*sh));
	size_t n = 0;

	if (!sh)
		return -1;
	sh->in_fd = sh->rec_fd = -1;
	sh->base_fd[0] = sh->base_fd[1] = sh->base_fd[2] = -1;
	hsr_buf_init(&sh->feed);
	hsr_buf_init(&sh->rec);
	hsr_buf_init(&sh->last_a);
	hsr_buf_init(&sh->last_b);
	sh->prog = xstrdup(req->argv[0]);
	sh->start_dir = xstrdup(req->argv[2]);
	sh->under = xstrdup("");
	sh->pwd = xstrdup("");
	while (req->envp[n])
		n++;
	{
		/* A sandbox's own environment lies under the spec's (MERGE_ENV). */
		size_t m = 0;

		if (req->flags & HSR_EXEC_MERGE_ENV)
			while (environ && environ[m])
				m++;
		sh->env = calloc(n + m + 1, sizeof(char *));
		if (!sh->env)
			return -1;
		size_t k = 0;
		for (size_t i = 0; i < m; i++) {
			const char *eq = strchr(environ[i], '=');
			size_t nl = eq ? (size_t)(eq - environ[i]) : strlen(environ[i]);
			int over = strncmp(environ[i], "HS_", 3) == 0;

			for (size_t j = 0; j < n && !over; j++)
				if (strncmp(req->envp[j], environ[i], nl) == 0 && req->envp[j][nl] == '=')
					over = 1;
			if (!over)
				sh->env[k++] = xstrdup(environ[i]);
		}
		for (size_t j = 0; j < n; j++)
			sh->env[k++] = xstrdup(req->envp[j]);
	}
	snprintf(sh->null_path, sizeof(sh->null_path), "/dev/null");
	if (access("/dev/null", W_OK) < 0) {
		snprintf(sh->null_path, sizeof(sh->null_path), "%s/sh.null", d->rd->path);
		write_file(d, "sh.null", "", 0);
	}
	d->shell = sh;
	{
		struct hsr_buf x;

		struct hsr_buf dump;

		hsr_buf_init(&x);
		hsr_buf_init(&dump);
		put_exit_file(d, &x);
		put_dump_file(d, &dump, "sh.saved");
		int bad = dump.failed || write_file(d, "sh.d", dump.data, dump.len) < 0;
		dump.len = 0;
		put_dump_file(d, &dump, "sh.pty");
		bad = bad || dump.failed || write_file(d, "sh.pd", dump.data, dump.len) < 0;
		hsr_buf_free(&dump);
		if (bad || x.failed || write_file(d, "sh.x", x.data, x.len) < 0 ||
		    write_file(d, "sh.ret", ret_file, sizeof(ret_file) - 1) < 0) {
			hsr_buf_free(&x);
			return -1;
		}
		hsr_buf_free(&x);
	}
	return 0;
}

/* ---- commands ---- */

/* Returns 1 when text may run `exec PROGRAM`, which replaces the shell
 * without its EXIT trap: `exec` as a word followed by something other than
 * a redirection (exec >file, exec 3<&-) or nothing. */
static int may_exec_program(const char *text)
{
	for (const char *p = strstr(text, "exec"); p; p = strstr(p + 4, "exec")) {
		const char *q = p + 4;

		if (p != text && !strchr(" \t\n;&|({!", p[-1]))
			continue;
		if (*q != ' ' && *q != '\t')
			continue;
		while (*q == ' ' || *q == '\t')
			q++;
		if (*q && !strchr("<>&0123456789{;|)\n#", *q))
			return 1;
	}
	return 0;
}

/* Appends "NAME" of the per-command variable "NAME=VALUE" to b; returns
 * the value, or NULL when the entry is not NAME=VALUE. */
static const char *put_var_name(struct hsr_buf *b, const char *kv)
{
	const char *eq = strchr(kv, '=');

	if (!eq || eq == kv || eq - kv >= 256)
		return NULL;
	for (const char *p = kv; p < eq; p++)
		if (!(*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (p > kv && *p >= '0' && *p <= '9')))
			return NULL;
	hsr_buf_put(b, kv, (size_t)(eq - kv));
	return eq + 1;
}

/*
 * Feeds the command as one group, so its streams are its own for exactly
 * its duration and the shell's program input (fd 0 outside the group) is
 * never a command's.  Bash reads that input a byte at a time, so the
 * bookkeeping lives in two files it sources, written for each command:
 *
 *     { . sh.a LAST && { : LAST; } 2>NULL
 *     COMMAND
 *     } <IN >OUT 2>ERR
 *     { . sh.b "$_"; } 2>NULL
 *
 * sh.a: the stdin sync, cd and variables for this command only, then
 * `set -x` when it was on and `return STATUS` ($? and, through the dot's
 * last argument, $_).  sh.b: the record, `set +x`, the variables and the
 * directory put back.
 */
static int feed_cmd(struct hsr_daemon *d, struct hsr_shell *sh, struct hsr_cmd *cmd)
{
	struct hsr_exec_req *q = cmd->req;
	struct hsr_buf *b = &sh->feed, fa, fb;
	const char *text = q->argv[1], *cwd = q->argv[3];
	char st[16];
	int stdin_pipe = (q->flags & HSR_EXEC_STDIN_PIPE) != 0, rc;

	if (open_record(d, sh) < 0)
		return -1;
	hsr_buf_init(&fa);
	hsr_buf_init(&fb);
	if (sh->trap_query)
		put_trap(d, b); /* the last command showed the session's own */
	sh->trap_query = strstr(text, "trap") != NULL;

	if (stdin_pipe) {
		put_s(&fa, ">|");
		put_path(d, &fa, "sh.s");
		put_s(&fa, "\n");
	}
	/* A command that may replace the shell, or one that sets its own
	 * traps (ours is lifted while it runs, so a signal ends the shell
	 * unsaved): the state as it starts is saved first, so the next shell
	 * starts from it (see shell_died). */
	sh->trap_predump = sh->trap_query && !may_exec_program(text);
	if (may_exec_program(text) || sh->trap_query) {
		put_s(&fa, "{ \\builtin . ");
		put_path(d, &fa, "sh.d");
		put_s(&fa, " && \\builtin printf '#pre\\n' >>");
		put_path(d, &fa, "sh.saved");
		put_s(&fa, "; \\builtin unset __hs_o __hs_f __hs_i; } 2>/dev/null\n");
	}
	if (cwd && *cwd) {
		put_s(&fa, "\\builtin cd -- ");
		put_sq(&fa, cwd);
		put_s(&fa, "\n");
	}
	/* `trap -p` in the command shows the session's traps only: its own
	 * EXIT trap in place of ours. */
	if (sh->trap_query) {
		put_s(&fa, "{ \\builtin ");
		put_s(&fa, sh->agent_exit_trap && sh->agent_trap ? sh->agent_trap : "trap - EXIT");
		put_s(&fa, "; } 2>/dev/null\n");
	}
	/* Per-command variables: the old definition kept in a file, put back after. */
	for (int i = 4; q->argv[i]; i++) {
		size_t mark = fa.len;
		const char *val;

		put_s(&fa, "{ \\builtin declare -p ");
		if (!(val = put_var_name(&fa, q->argv[i]))) {
			fa.len = mark;
			continue;
		}
		put_s(&fa, i == 4 ? " >|" : " >>");
		put_path(d, &fa, "sh.env");
		put_s(&fa, " || \\builtin printf '\\\\builtin unset %s\\n' ");
		put_var_name(&fa, q->argv[i]);
		put_s(&fa, " >>");
		put_path(d, &fa, "sh.env");
		put_s(&fa, "; \\builtin export ");
		put_var_name(&fa, q->argv[i]);
		put_s(&fa, "=");
		put_sq(&fa, val);
		put_s(&fa, "; } 2>/dev/null\n");
		put_s(&fb, "\\builtin unset ");
		put_var_name(&fb, q->argv[i]);
		put_s(&fb, "\n");
	}
	if (q->argv[4]) {
		put_s(&fb, "\\builtin . ");
		put_path(d, &fb, "sh.env");
		put_s(&fb, "\n");
	}
	snprintf(st, sizeof(st), "%d", sh->status & 255);
	put_s(&fa, "{ ");
	if (sh->xtrace)
		put_s(&fa, "\\builtin set -x; ");
	put_s(&fa, "\\builtin return \"$1\"; } 2>/dev/null\n");

	/* sh.b: the record first ($? is the command's), then the rest. */
	{
		struct hsr_buf rb;

		hsr_buf_init(&rb);
		put_s(&rb, "\\builtin printf '%s\\0' \"$?\" \"$1\" \"$-\" \"${PWD-}\"");
		/* After a command that may have set one: the EXIT trap, so the
		 * session's own is known (a command substitution sees the shell's). */
		if (sh->trap_query)
			put_s(&rb, " \"$(\\builtin trap -p EXIT)\"");
		put_s(&rb, " >|");
		put_path(d, &rb, sh->rec_name);
		put_s(&rb, "\n\\builtin set +x\n");
		/* HS_* configure hs, never the session: a nested hs of a later
		 * command must not take an exported HS_CONFIG as its own. */
		put_s(&rb, "\\builtin unset ${!HS_*}\n");
		hsr_buf_put(&rb, fb.data, fb.len);
		if (cwd && *cwd && sh->pwd[0]) {
			put_s(&rb, "\\builtin cd -- ");
			put_sq(&rb, sh->pwd);
			put_s(&rb, "\n");
		}
		hsr_buf_free(&fb);
		fb = rb;
	}
	rc = fa.failed || fb.failed || write_cached(d, "sh.a", &sh->last_a, &fa) < 0 ||
	     write_cached(d, "sh.b", &sh->last_b, &fb) < 0 ? -1 : 0;
	hsr_buf_free(&fa);
	hsr_buf_free(&fb);
	if (rc < 0)
		return -1;

	put_s(b, "{ \\builtin . ");
	put_path(d, b, "sh.a");
	put_s(b, " ");
	put_s(b, st);
	put_s(b, " ");
	put_sq(b, sh->under);
	put_s(b, " && { \\builtin : ");
	put_sq(b, sh->under);
	put_s(b, "; } 2>");
	put_sq(b, sh->null_path);
	put_s(b, "\n");
	put_s(b, text);
	put_s(b, "\n} <");
	if (stdin_pipe)
		put_path(d, b, "sh.0");
	else
		put_sq(b, sh->null_path);
	put_s(b, " >");
	put_path(d, b, "sh.1");
	put_s(b, " 2>");
	put_path(d, b, "sh.2");
	put_s(b, "\n{ \\builtin . ");
	put_path(d, b, "sh.b");
	put_s(b, " \"$_\"; } 2>");
	put_sq(b, sh->null_path);
	put_s(b, "\n");
	return b->failed ? -1 : 0;
}

/* Creates the command's FIFOs and opens the daemon's ends. */
static int make_fifos(struct hsr_daemon *d, struct hsr_cmd *cmd, int stdin_pipe)
{
	char name[48];

	for (int s = 0; s <= 3; s++) {
		if (s == 3 && !stdin_pipe)
			break;
		if (s == 0 && !stdin_pipe)
			continue;
		snprintf(name, sizeof(name), "sh.%c", "012s"[s]);
		unlinkat(d->rd->dirfd, name, 0);
		if (mkfifoat(d->rd->dirfd, name, 0600) < 0)
			return -1;
	}
	for (int s = 1; s <= 2; s++) {
		snprintf(name, sizeof(name), "sh.%d", s);
		cmd->pipe_fd[s] = openat(d->rd->dirfd, name, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (cmd->pipe_fd[s] < 0)
			return -1;
	}
	if (stdin_pipe) {
		/* Held open for reading until the shell has opened it, so bytes
		 * written before that wait in the pipe (the sync FIFO says when). */
		snprintf(name, sizeof(name), "sh.0");
		cmd->hold_fd = openat(d->rd->dirfd, name, O_RDWR | O_NONBLOCK | O_CLOEXEC);
		if (cmd->hold_fd < 0)
			return -1;
		cmd->stdin_fd = openat(d->rd->dirfd, name, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
		if (cmd->stdin_fd < 0)
			return -1;
		snprintf(name, sizeof(name), "sh.s");
		cmd->sync_fd = openat(d->rd->dirfd, name, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (cmd->sync_fd < 0)
			return -1;
	}
	return 0;
}

/* The running command's FIFOs and files go once it is done (a background
 * job keeps its descriptors; the next command gets new FIFOs). */
static void unlink_fifos(struct hsr_daemon *d)
{
	static const char *const names[] = { "sh.0", "sh.1", "sh.2", "sh.s" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		unlinkat(d->rd->dirfd, names[i], 0);
}

static void start_next(struct hsr_daemon *d);

/* The command is over: its status is set; report it once its streams drain. */
static void finish(struct hsr_daemon *d, struct hsr_cmd *cmd)
{
	struct hsr_shell *sh = d->shell;

	cmd->done = 1;
	cmd->drain_until = hsr_now_ms() + HSR_DRAIN_MS;
	if (sh->lost[0]) {
		cmd->restarted = 1;
		snprintf(cmd->reason, sizeof(cmd->reason), "%s", sh->lost);
		sh->lost[0] = '\0';
	}
	if (!cmd->st.timed_out && !cmd->st.cancelled)
		cmd->jobs_left = (uint32_t)count_left(d);
	if (cmd->jobs_left)
		record_job(d, cmd);
	close_fd(&cmd->hold_fd);
	close_fd(&cmd->sync_fd);
	close_fd(&cmd->stdin_fd);
	if (!cmd->pty) { /* a terminal command's goes to its terminal */
		hsr_buf_free(&cmd->stdin_buf);
		cmd->stdin_pos = 0;
	}
	unlink_fifos(d);
	free(cmd->req);
	cmd->req = NULL;
	sh->cur = NULL;
	sh->killing = 0;
	sh->died = 0;
	if (cmd->pty) {
		/* A terminal command: its own shell, from the state just dumped,
		 * in an empty environment (the dump has every variable). */
		char *noenv[] = { NULL };

		hsr_pty_from_session(d, cmd, sh->prog, noenv,
				     sh->agent_exit_trap ? sh->agent_trap : NULL);
	}
	start_next(d);
}

static int feed_flush(struct hsr_shell *sh)
{
	while (sh->feed_pos < sh->feed.len) {
		ssize_t n = send(sh->in_fd, sh->feed.data + sh->feed_pos, sh->feed.len - sh->feed_pos,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? 0 : -1;
		}
		sh->feed_pos += (size_t)n;
	}
	sh->feed.len = sh->feed_pos = 0;
	return 0;
}

static void fail_cmd(struct hsr_daemon *d, struct hsr_cmd *cmd, const char *why)
{
	static const char pfx[] = "hs-runner: ";

	hsr_spool_append(&cmd->sp[2], d->rd->dirfd, pfx, sizeof(pfx) - 1);
	hsr_spool_append(&cmd->sp[2], d->rd->dirfd, why, strlen(why));
	hsr_spool_append(&cmd->sp[2], d->rd->dirfd, "\n", 1);
	close_fd(&cmd->pipe_fd[1]);
	close_fd(&cmd->pipe_fd[2]);
	cmd->st.exit_code = 126;
	d->shell->cur = cmd;
	finish(d, cmd);
}

/* A terminal command of the session runs in a shell of its own: what the
 * session shell runs for it is a dump of its state into sh.pty (with the
 * command's directory and variables applied), leaving $? and $_ as they
 * were.  Returns 0 or -1. */
static int pty_feed(struct hsr_daemon *d, struct hsr_shell *sh, struct hsr_cmd *cmd)
{
	struct hsr_buf b;
	char st[16];

	unlinkat(d->rd->dirfd, "sh.pty", 0);
	hsr_buf_init(&b);
	put_s(&b, "{ \\builtin . ");
	put_path(d, &b, "sh.pd");
	put_s(&b, "; \\builtin unset __hs_o __hs_f __hs_i; } 2>");
	put_sq(&b, sh->null_path);
	snprintf(st, sizeof(st), "%d", sh->status & 255);
	put_s(&b, "; { \\builtin . ");
	put_path(d, &b, "sh.ret");
	put_s(&b, " ");
	put_s(&b, st);
	put_s(&b, " ");
	put_sq(&b, sh->under);
	put_s(&b, "; } 2>");
	put_sq(&b, sh->null_path);
	hsr_buf_put(&b, "", 1);
	if (b.failed) {
		hsr_buf_free(&b);
		return -1;
	}
	free(cmd->pty_feed);
	cmd->pty_feed = (char *)b.data;
	cmd->req->argv[1] = cmd->pty_feed;
	return 0;
}

/* Starts the oldest queued session command once the shell is ready. */
static void start_next(struct hsr_daemon *d)
{
	struct hsr_shell *sh = d->shell;
	struct hsr_cmd *next = NULL;

	if (sh->cur || d->stopping)
		return;
	for (struct hsr_cmd *c = d->cmds; c; c = c->next)
		if (c->session && c->req && !c->done)
			next = c; /* the list is newest first: the last found is the oldest */
	if (!next)
		return;
	if (!sh->pid) {
		if (shell_start(d, sh) < 0) {
			char why[256];

			snprintf(why, sizeof(why), "cannot start the session shell '%s': %s", sh->prog,
				 strerror(errno));
			shell_reset(sh);
			fail_cmd(d, next, why);
			return;
		}
	}
	if (sh->initing)
		return; /* the start-up record comes first */
	{
		const char *cwd = next->req->argv[3];
		struct stat st;

		if (cwd && *cwd && (stat(cwd, &st) < 0 || !S_ISDIR(st.st_mode))) {
			char why[4200];

			snprintf(why, sizeof(why), "cannot change directory to '%s': %s", cwd,
				 errno ? strerror(errno) : "not a directory");
			fail_cmd(d, next, why);
			return;
		}
	}
	sh->cur = next;
	sh->start_tick = now_ticks();
	sh->deadline = next->req->deadline_ms > 0 ? hsr_now_ms() + next->req->deadline_ms : 0;
	sh->killing = 0;
	sh->died = 0;
	sh->incomplete_sent = 0;
	sh->next_check = hsr_now_ms() + INCOMPLETE_CHECK_MS;
	if (next->pty && pty_feed(d, sh, next) < 0) {
		sh->cur = NULL;
		fail_cmd(d, next, "cannot start the command on a terminal: out of memory");
		return;
	}
	if (make_fifos(d, next, (next->req->flags & HSR_EXEC_STDIN_PIPE) != 0) < 0 ||
	    feed_cmd(d, sh, next) < 0) {
		char why[256];

		snprintf(why, sizeof(why), "cannot start the command in the session shell: %s",
			 strerror(errno));
		sh->cur = NULL;
		fail_cmd(d, next, why);
		return;
	}
	hsr_cmd_stdin_kick(next); /* what came while it waited */
	feed_flush(sh);
}

void hsr_shell_exec(struct hsr_daemon *d, struct hsr_conn *c, struct hsr_exec_req *req,
		    struct hsr_cmd *cmd)
{
	(void)c;
	/* argv: shell, command, start directory, directory for this command
	 * only (""), then per-command NAME=VALUE. */
	if (!d->shell && shell_init(d, req) < 0) {
		hsr_conn_error(c, req->id, HSR_E_EXEC, "cannot set up the session shell: %s",
			       strerror(errno));
		free(req);
		return;
	}
	cmd->session = 1;
	cmd->req = req;
	cmd->hold_fd = cmd->sync_fd = -1;
	start_next(d);
}

/* ---- events ---- */

/* The EXIT trap a command left (`trap -- 'T' EXIT`, or ""): kept, and T
 * unquoted into sh.xt for ours to run at exit. */
static void note_agent_trap(struct hsr_daemon *d, struct hsr_shell *sh, const char *line)
{
	static const char pre[] = "trap -- '", post[] = "' EXIT";
	size_t n = strlen(line), pl = sizeof(pre) - 1, sl = sizeof(post) - 1;
	struct hsr_buf t;

	free(sh->agent_trap);
	sh->agent_trap = NULL;
	sh->agent_exit_trap = 0;
	unlinkat(d->rd->dirfd, "sh.xt", 0);
	while (n && line[n - 1] == '\n')
		n--;
	if (n < pl + sl || memcmp(line, pre, pl) || memcmp(line + n - sl, post, sl))
		return; /* none, or not in the form bash prints */
	hsr_buf_init(&t);
	put_s(&t, "{ \\builtin . ");
	put_path(d, &t, "sh.ret");
	put_s(&t, " \"$1\"; } 2>/dev/null && { :; } 2>/dev/null\n");
	for (size_t i = pl; i < n - sl; i++) {
		if (line[i] == '\'' && i + 3 < n - sl + 1 && memcmp(line + i, "'\\''", 4) == 0) {
			hsr_buf_put(&t, "'", 1);
			i += 3;
		} else {
			hsr_buf_put(&t, line + i, 1);
		}
	}
	hsr_buf_put(&t, "\n", 1);
	sh->agent_trap = strndup(line, n);
	if (!t.failed && sh->agent_trap &&
	    write_file(d, "sh.xt", t.data, t.len) == 0)
		sh->agent_exit_trap = 1;
	hsr_buf_free(&t);
}

static void parse_record(struct hsr_daemon *d, struct hsr_shell *sh)
{
	const char *p = (const char *)sh->rec.data, *end = p + sh->rec.len;
	const char *f[5] = { NULL, NULL, NULL, NULL, NULL };

	for (int i = 0; i < 5 && p < end; i++) {
		const char *z = memchr(p, '\0', (size_t)(end - p));

		if (!z)
			break;
		f[i] = p;
		p = z + 1;
	}
	if (!f[3])
		return;
	sh->status = atoi(f[0]);
	free(sh->under);
	sh->under = xstrdup(f[1]);
	sh->xtrace = strchr(f[2], 'x') != NULL;
	free(sh->pwd);
	sh->pwd = xstrdup(f[3]);
	if (sh->trap_query && f[4])
		note_agent_trap(d, sh, f[4]);
}

/* Takes what bash wrote on its own streams: the running command's. */
static void read_base(struct hsr_daemon *d, struct hsr_shell *sh, int s)
{
	char buf[16384];

	while (sh->base_fd[s] >= 0) {
		ssize_t n = read(sh->base_fd[s], buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return;
		if (n == 0) {
			close_fd(&sh->base_fd[s]);
			return;
		}
		if (sh->cur && !sh->cur->exit_sent)
			hsr_spool_append(&sh->cur->sp[s], d->rd->dirfd, buf, (size_t)n);
	}
}

static void record_done(struct hsr_daemon *d, struct hsr_shell *sh)
{
	close_fd(&sh->rec_fd);
	if (sh->initing) {
		/* $? stays the last command's (a shell that died leaves its status). */
		int keep = sh->status;

		parse_record(d, sh);
		sh->status = keep;
		sh->initing = 0;
		/* Taken: the next shell must not find it again. */
		unlinkat(d->rd->dirfd, "sh.saved", 0);
		sh->initing_failed_once = 0;
		sh->trap_query = 0;
		start_next(d);
		return;
	}
	parse_record(d, sh);
	/* A dump taken before a command that might exec is stale now. */
	unlinkat(d->rd->dirfd, "sh.saved", 0);
	if (sh->cur && !sh->killing) {
		struct hsr_cmd *cmd = sh->cur;

		read_base(d, sh, 1);
		read_base(d, sh, 2);
		cmd->st.exit_code = sh->status;
		cmd->pty_ready = cmd->pty;
		finish(d, cmd);
	}
}

static void read_record(struct hsr_daemon *d, struct hsr_shell *sh)
{
	char buf[4096];

	for (;;) {
		ssize_t n = read(sh->rec_fd, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return; /* EAGAIN: more to come */
		if (n == 0) {
			record_done(d, sh);
			return;
		}
		if (sh->rec.len + (size_t)n <= 65536)
			hsr_buf_put(&sh->rec, buf, (size_t)n);
	}
}

/* The shell went.  A command it was running ends with its status; the
 * next shell starts from the saved state, if the EXIT trap wrote it. */
static void shell_died(struct hsr_daemon *d, int status)
{
	struct hsr_shell *sh = d->shell;
	int code = WIFEXITED(status) ? WEXITSTATUS(status)
				     : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
	struct hsr_cmd *cmd = sh->cur;
	int saved = 0;

	/* What it wrote as it went (its EXIT trap, an error) is the command's. */
	read_base(d, sh, 1);
	read_base(d, sh, 2);
	saved = saved_state(d);
	/* An exec leaves what the command meant to; a command that set its
	 * own traps (ours lifted) and ended the shell loses its own changes. */
	if (saved == SAVED_BEFORE && cmd && sh->trap_predump)
		snprintf(sh->lost, sizeof(sh->lost), "the shell ended while a command that sets its own "
			 "traps ran; the next shell starts from the state as that command began");
	if (saved == SAVED_NONE) {
		if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
			snprintf(sh->lost, sizeof(sh->lost), "the shell was killed (SIGKILL); its state since "
				 "the session started was lost");
		else
			snprintf(sh->lost, sizeof(sh->lost), "the shell was replaced or ended without "
				 "saving its state (exit status %d); a new shell started", code);
	}
	int was_initing = sh->initing;

	shell_reset(sh);
	if (!was_initing)
		sh->initing_failed_once = 0;
	close_fd(&sh->rec_fd);
	if (sh->rec_name[0])
		unlinkat(d->rd->dirfd, sh->rec_name, 0);
	sh->rec_name[0] = '\0';
	sh->status = code;
	free(sh->under);
	sh->under = xstrdup("");
	if (!cmd) {
		/* Between commands the next one starts a new shell; one that
		 * never got through its start-up fails the command waiting. */
		if (sh->initing_failed_once++ == 0) {
			start_next(d);
		} else {
			for (struct hsr_cmd *c = d->cmds; c; c = c->next)
				if (c->session && c->req && !c->done) {
					char why[300];

					snprintf(why, sizeof(why), "the session shell '%s' exits as it starts "
						 "(status %d)", sh->prog, code);
					fail_cmd(d, c, why);
					break;
				}
			sh->initing_failed_once = 0;
		}
		return;
	}
	sh->died = 1;
	sh->died_status = code;
	cmd->st.exit_code = code;
	if (!sh->killing) {
		finish(d, cmd);
		return;
	}
	/* Stopped at a deadline or by a cancel: done when nothing of it is left. */
	if (signal_cmd_procs(d, 0, 0) == 0)
		finish(d, cmd);
}

/* From /proc/PID/syscall, then the descriptor's link. */
int hsr_proc_reading(pid_t pid, unsigned long ino, unsigned long rdev)
{
	char path[64], buf[256];
	struct stat st;
	ssize_t n;
	long nr = -1;
	unsigned long a0 = 0;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/syscall", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	if (sscanf(buf, "%ld %lx", &nr, &a0) != 2 || nr != SYS_read)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/fd/%lu", (int)pid, a0);
	if (stat(path, &st) < 0)
		return 0;
	if (rdev)
		return S_ISCHR(st.st_mode) && (unsigned long)st.st_rdev == rdev;
	return (unsigned long)st.st_ino == ino;
}

/* Returns 1 when process pid is blocked in read() on a descriptor whose
 * file has inode ino (from /proc/PID/syscall, then the descriptor's link). */
static int reading_inode(pid_t pid, unsigned long ino)
{
	return hsr_proc_reading(pid, ino, 0);
}

/* Nothing is waiting to be fed and bash is blocked reading its program:
 * the command left a quote, heredoc or compound open.  Returns 1 then. */
static int waiting_for_more(struct hsr_shell *sh)
{
	int outq = 0;

	if (ioctl(sh->in_fd, SIOCOUTQ, &outq) < 0 || outq > 0)
		return 0;
	/* The program socket, wherever bash moved it. */
	return reading_inode(sh->pid, sh->in_ino);
}

/*
 * Whether cmd waits for input: its stdin pipe holds nothing (nothing is
 * left to write into it either) and a process below top that started at
 * since or later (or top itself, with top_too) is blocked reading it.
 * Returns 1 then.
 */
static int waiting_input(struct hsr_cmd *cmd, pid_t top, int top_too, unsigned long long since)
{
	struct hsr_proc *t;
	struct stat st;
	pid_t self = getpid();
	int queued = 0, n, hit = 0;

	if (cmd->pty_fd >= 0)
		return hsr_pty_waiting(cmd);
	if (cmd->stdin_fd < 0 || cmd->done || cmd->stdin_pos < cmd->stdin_buf.len ||
	    fstat(cmd->stdin_fd, &st) < 0 || ioctl(cmd->stdin_fd, FIONREAD, &queued) < 0 || queued > 0)
		return 0;
	if (top_too && reading_inode(top, (unsigned long)st.st_ino))
		return 1;
	n = hsr_proc_table(&t);
	for (int i = 0; i < n && !hit; i++) {
		struct hsr_proc *q = &t[i];
		int depth = 0;

		if (q->pid == self || q->pid == top || q->start < since)
			continue;
		for (struct hsr_proc *a = q; a && depth < 4096; depth++, a = hsr_proc_find(t, n, a->ppid))
			if (a->ppid == top) {
				hit = reading_inode(q->pid, (unsigned long)st.st_ino);
				break;
			}
	}
	free(t);
	return hit;
}

/* Sends WAITING (now: 0 or 1) for cmd when it changed and was asked for. */
static void report_waiting(struct hsr_cmd *cmd, int now)
{
	struct hsr_msg m = { .type = HSR_F_WAITING, .id = cmd->id, .final = (uint8_t)now };

	if (!cmd->report_wait || cmd->waiting == now)
		return;
	cmd->waiting = now;
	if (cmd->owner)
		hsr_msg_encode(&cmd->owner->out, &m, 1);
}

static void start_kill(struct hsr_daemon *d, struct hsr_shell *sh, int64_t grace)
{
	if (sh->killing)
		return;
	sh->killing = 1;
	sh->kill_at = hsr_now_ms() + (grace >= 0 ? grace : HSR_DEFAULT_GRACE_MS);
	/* The shell saves its state in its EXIT trap and goes; the command's
	 * processes get TERM, and CONT in case they were stopped. */
	if (sh->pid > 0)
		kill(sh->pid, SIGTERM);
	signal_cmd_procs(d, SIGTERM, 0);
	signal_cmd_procs(d, SIGCONT, 0);
}

void hsr_shell_control(struct hsr_daemon *d, struct hsr_cmd *cmd, uint8_t op, uint32_t arg)
{
	struct hsr_shell *sh = d->shell;

	if (!sh || cmd->done)
		return;
	if (sh->cur != cmd) {
		/* Still queued: a cancel ends it before it starts. */
		if (op == HSR_SHIM_CANCEL) {
			close_fd(&cmd->pipe_fd[1]);
			close_fd(&cmd->pipe_fd[2]);
			cmd->st.cancelled = 1;
			cmd->st.exit_code = 128 + SIGTERM;
			cmd->done = 1;
			free(cmd->req);
			cmd->req = NULL;
		}
		return;
	}
	if (op == HSR_SHIM_CANCEL) {
		cmd->st.cancelled = 1;
		start_kill(d, sh, arg == HSR_GRACE_DEFAULT ? cmd->grace_ms : (int64_t)arg);
	} else if (op == HSR_SHIM_SIGNAL) {
		signal_cmd_procs(d, (int)arg, 0);
	}
}

int hsr_shell_pollfds(struct hsr_daemon *d, struct pollfd *pfd, int max)
{
	struct hsr_shell *sh = d->shell;
	int n = 0;

	if (!sh)
		return 0;
	sh->poll_gen = sh->gen;
	if (n < max && sh->in_fd >= 0 && sh->feed_pos < sh->feed.len)
		pfd[n++] = (struct pollfd){ .fd = sh->in_fd, .events = POLLOUT };
	if (n < max && sh->rec_fd >= 0)
		pfd[n++] = (struct pollfd){ .fd = sh->rec_fd, .events = POLLIN };
	for (int s = 1; s <= 2; s++)
		if (n < max && sh->base_fd[s] >= 0)
			pfd[n++] = (struct pollfd){ .fd = sh->base_fd[s], .events = POLLIN };
	if (sh->cur && sh->cur->sync_fd >= 0 && n < max)
		pfd[n++] = (struct pollfd){ .fd = sh->cur->sync_fd, .events = POLLIN };
	for (struct joblog *j = sh->logs; j && n < max; j = j->next)
		if (j->fd >= 0)
			pfd[n++] = (struct pollfd){ .fd = j->fd, .events = POLLIN };
	return n;
}

int hsr_shell_npoll(struct hsr_daemon *d)
{
	int n = 6;

	if (d->shell)
		for (struct joblog *j = d->shell->logs; j; j = j->next)
			n++;
	return n;
}

void hsr_shell_io(struct hsr_daemon *d, const struct pollfd *pfd, int n)
{
	struct hsr_shell *sh = d->shell;

	if (!sh)
		return;
	for (int i = 0; i < n; i++) {
		/* A slot of descriptors that changed since the poll (the shell
		 * died, a command started) is left for the next round. */
		if (sh->gen != sh->poll_gen)
			break;
		if (!pfd[i].revents)
			continue;
		if (pfd[i].fd == sh->in_fd) {
			if (feed_flush(sh) < 0)
				sh->feed.len = sh->feed_pos = 0; /* the shell is gone; SIGCHLD says so */
		} else if (pfd[i].fd == sh->rec_fd) {
			read_record(d, sh);
		} else if (pfd[i].fd == sh->base_fd[1] || pfd[i].fd == sh->base_fd[2]) {
			read_base(d, sh, pfd[i].fd == sh->base_fd[1] ? 1 : 2);
		} else if (sh->cur && pfd[i].fd == sh->cur->sync_fd) {
			/* The shell opened the command's stdin: stop holding it. */
			close_fd(&sh->cur->sync_fd);
			close_fd(&sh->cur->hold_fd);
		} else {
			for (struct joblog *j = sh->logs; j; j = j->next)
				if (j->fd == pfd[i].fd)
					joblog_read(j);
		}
	}
	for (struct joblog **pp = &sh->logs; *pp;) {
		struct joblog *j = *pp;

		if (j->fd < 0) {
			*pp = j->next;
			close_fd(&j->logfd);
			free(j);
		} else {
			pp = &j->next;
		}
	}
}

void hsr_shell_reaped(struct hsr_daemon *d, pid_t pid, int status)
{
	if (d->shell && pid == d->shell->pid && pid > 0)
		shell_died(d, status);
}

int64_t hsr_shell_tick(struct hsr_daemon *d)
{
	struct hsr_shell *sh = d->shell;
	int64_t now = hsr_now_ms(), wake = -1;
	struct hsr_cmd *cmd;

	if (!sh)
		return -1;
	for (struct bgjob *j = sh->jobs; j; j = j->next)
		if (j->kill_at) {
			if (now >= j->kill_at) {
				job_procs(j, SIGKILL);
				j->kill_at = job_procs(j, 0) ? now + 100 : 0;
			}
			if (j->kill_at && (wake < 0 || j->kill_at < wake))
				wake = j->kill_at;
		}
	if (!(cmd = sh->cur))
		return wake;
	if (!sh->killing && sh->deadline > 0) {
		if (now >= sh->deadline) {
			cmd->st.timed_out = 1;
			start_kill(d, sh, cmd->grace_ms);
		} else {
			wake = sh->deadline;
		}
	}
	if (sh->killing) {
		if (now >= sh->kill_at) {
			/* The command's processes go at the grace; the shell, still
			 * writing its state on a slow machine, some seconds later. */
			if (sh->pid > 0 && now >= sh->kill_at + SHELL_SAVE_MS) {
				snprintf(sh->lost, sizeof(sh->lost), "the shell did not stop within the grace "
					 "period and was killed; its state since the session started was lost");
				kill(sh->pid, SIGKILL);
			}
			signal_cmd_procs(d, SIGKILL, 0);
			if (sh->pid == 0 && sh->cur == cmd && signal_cmd_procs(d, 0, 0) == 0) {
				finish(d, cmd);
				return 0; /* at once: the loop sends its EXIT as it starts over */
			}
			wake = now + 20;
		} else {
			/* The shell may be gone with processes of the command left. */
			if (sh->pid == 0 && signal_cmd_procs(d, 0, 0) == 0) {
				finish(d, cmd);
				return 0;
			}
			wake = sh->kill_at < now + 50 ? sh->kill_at : now + 50;
		}
		return wake;
	}
	if (sh->pid > 0 && now >= sh->next_check) {
		sh->next_check = now + INCOMPLETE_CHECK_MS;
		if (!sh->incomplete_sent && waiting_for_more(sh)) {
			/* End of input: bash reports the open construct and exits
			 * through its EXIT trap, so the next shell has the state. */
			sh->incomplete_sent = 1;
			shutdown(sh->in_fd, SHUT_WR);
		}
		/* The shell (a `read` builtin) or a process of the command. */
		if (cmd->report_wait)
			report_waiting(cmd, waiting_input(cmd, sh->pid, 1, sh->start_tick));
	}
	if (sh->pid > 0 && (wake < 0 || sh->next_check < wake))
		wake = sh->next_check;
	return wake;
}

int64_t hsr_waiting_tick(struct hsr_daemon *d)
{
	int64_t now = hsr_now_ms();
	int any = 0;

	for (struct hsr_cmd *cmd = d->cmds; cmd; cmd = cmd->next) {
		/* Once it is being stopped, its dying is no answer: WAITING stands. */
		if (cmd->session || !cmd->report_wait || cmd->shim <= 0 ||
		    (cmd->stop_at > 0 && now >= cmd->stop_at))
			continue;
		any = 1;
		/* One-shot commands: the processes below their shim. */
		if (now >= d->next_wait_check)
			report_waiting(cmd, waiting_input(cmd, cmd->shim, 0, 0));
	}
	if (now >= d->next_wait_check)
		d->next_wait_check = now + INCOMPLETE_CHECK_MS;
	return any ? d->next_wait_check : -1;
}

int hsr_shell_alive(struct hsr_daemon *d)
{
	return d->shell && (d->shell->pid > 0 || signal_cmd_procs(d, 0, 1) > 0);
}

void hsr_shell_stop(struct hsr_daemon *d, int sig)
{
	struct hsr_shell *sh = d->shell;

	if (!sh)
		return;
	/* The session ends: its shell's EXIT trap has no state to save. */
	unlinkat(d->rd->dirfd, "sh.x", 0);
	if (sh->pid > 0)
		kill(sh->pid, sig == SIGKILL ? SIGKILL : SIGHUP);
	signal_cmd_procs(d, sig, 1);
	if (sig != SIGKILL)
		signal_cmd_procs(d, SIGCONT, 1);
}

void hsr_shell_free(struct hsr_daemon *d)
{
	struct hsr_shell *sh = d->shell;

	if (!sh)
		return;
	close_fd(&sh->in_fd);
	close_fd(&sh->rec_fd);
	close_fd(&sh->base_fd[1]);
	close_fd(&sh->base_fd[2]);
	while (sh->logs) {
		struct joblog *j = sh->logs;

		sh->logs = j->next;
		close_fd(&j->fd);
		close_fd(&j->logfd);
		free(j);
	}
	hsr_buf_free(&sh->feed);
	hsr_buf_free(&sh->rec);
	hsr_buf_free(&sh->last_a);
	hsr_buf_free(&sh->last_b);
	while (sh->jobs) {
		struct bgjob *j = sh->jobs;

		sh->jobs = j->next;
		free(j);
	}
	for (char **e = sh->env; e && *e; e++)
		free(*e);
	free(sh->env);
	free(sh->prog);
	free(sh->start_dir);
	free(sh->under);
	free(sh->pwd);
	free(sh->agent_trap);
	free(sh);
	d->shell = NULL;
}
