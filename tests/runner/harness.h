/* SPDX-License-Identifier: MIT */
/* Test harness for hs-runner: starts daemons and streams. */
#ifndef HSR_TEST_HARNESS_H
#define HSR_TEST_HARNESS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "client.h"

/* The session key every test stream uses (hs-runner(7), "Authentication"). */
extern const uint8_t hsr_test_key[HSR_KEY_LEN];

/* Returns the path of the hs-runner binary under test. */
const char *hsr_test_runner(void);
/* Spawns argv with a socketpair as its stdin and stdout; returns our end
 * and sets *pid. */
int hsr_test_spawn_stream(char *const *argv, pid_t *pid);
/* Opens a client on `hs-runner --attach --dir DIR` (with --start if start).
 * Returns NULL on failure (the message is printed). */
struct hsr_client *hsr_test_attach(const char *dir, int start, pid_t *pid);
/* Starts `hs-runner --daemon --foreground --dir DIR --idle IDLE` and waits
 * for its socket.  Returns its pid or -1. */
pid_t hsr_test_daemon(const char *dir, int idle);
/* Returns how many processes have a command line containing marker. */
int hsr_test_count_procs(const char *marker);
/* Returns VmRSS of pid in kB, or -1. */
long hsr_test_rss_kb(pid_t pid);
/* Returns VmHWM (the peak resident size) of pid in kB, or -1. */
long hsr_test_hwm_kb(pid_t pid);

/* A daemon (foreground, no idle exit) in a fresh directory and one
 * attached client; the state of hsr_test_setup()/hsr_test_teardown(). */
struct hsr_test_fixture {
	char tmp[64];
	char dir[96];  /* tmp/rt */
	pid_t daemon;  /* 0 once a test has reaped it */
	pid_t attach;
	struct hsr_client *c;
};

int hsr_test_setup(void **state);
int hsr_test_teardown(void **state);

/* Everything a test collects about one command. */
struct hsr_test_cmd {
	uint64_t id;
	char *out[4];     /* bytes by stream, NUL-terminated for convenience */
	size_t len[4];
	int exited;
	struct hsr_event exit;
};

/* Reads events until every command in cmds has exited (acknowledging each
 * byte and each exit) or timeout_ms passes.  Fails the test on an ERROR
 * event, a gap or a duplicate.  Returns 0 when all exited. */
int hsr_test_collect(struct hsr_client *c, struct hsr_test_cmd *cmds, size_t n, int timeout_ms);
void hsr_test_cmd_free(struct hsr_test_cmd *t);
/* Runs argv to completion with unlimited credit and returns its record. */
int hsr_test_run(struct hsr_client *c, uint64_t id, const char *const *argv,
		 const char *const *envp, const char *cwd, int64_t deadline_ms,
		 struct hsr_test_cmd *out);

#endif
