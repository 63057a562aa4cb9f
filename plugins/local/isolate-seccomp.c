/* SPDX-License-Identifier: MIT */
/*
 * isolate-seccomp.c - the system-call filter of the local backend's
 * isolated mode (libseccomp).  Everything is allowed except the calls
 * below, which fail with EPERM: they would undo the sandbox (mounts, new
 * user namespaces), reach into other processes (ptrace, process_vm_*,
 * pidfd_getfd), or reach the kernel's most exposed surfaces (bpf, keyring,
 * modules, kexec, perf, userfaultfd, io_uring, AF_VSOCK sockets to the
 * hypervisor and its other guests).  Without libseccomp the filter cannot
 * be built, and isolation refuses to run instead of running without it.
 * man/hs-local.7 lists the same calls; keep them in step.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "isolate.h"

#ifdef HAVE_SECCOMP
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <seccomp.h>

/* Denied outright with EPERM. */
static const char *const iso_denied[] = {
	/* the file system layout is fixed after setup */
	"mount", "umount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen",
	"fsconfig", "fsmount", "fspick", "mount_setattr",
	/* namespaces: no new ones, no joining others */
	"setns",
	/* other processes */
	"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp",
	/* kernel surfaces */
	"bpf", "keyctl", "add_key", "request_key", "init_module", "finit_module", "delete_module",
	"kexec_load", "kexec_file_load", "perf_event_open", "userfaultfd", "open_by_handle_at",
	"name_to_handle_at", "lookup_dcookie", "quotactl", "quotactl_fd", "acct", "swapon",
	"swapoff", "reboot", "syslog", "iopl", "ioperm", "uselib", "_sysctl", "nfsservctl",
	"vhangup", "fanotify_init", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
	/* io_uring runs system calls the filter never sees, and is a frequent kernel bug */
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	NULL,
};

static int
add_rules(scmp_filter_ctx ctx)
{
	int rc;
	for (int i = 0; iso_denied[i]; i++) {
		int nr = seccomp_syscall_resolve_name(iso_denied[i]);
		if (nr == __NR_SCMP_ERROR)
			continue; /* not on this architecture */
		if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0)) < 0)
			return rc;
	}
	/* New user namespaces: unshare and clone with CLONE_NEWUSER. */
	if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare), 1,
	                           SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER))) < 0)
		return rc;
	if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
	                           SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER))) < 0)
		return rc;
	/* clone3 passes its flags in memory a filter cannot read: answer ENOSYS,
	 * which makes the C library fall back to clone. */
	int nr = seccomp_syscall_resolve_name("clone3");
	if (nr != __NR_SCMP_ERROR &&
	    (rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), nr, 0)) < 0)
		return rc;
	/* Sockets to the hypervisor (AF_VSOCK): a way out of the network namespace. */
#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif
	if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socket), 1,
	                           SCMP_A0(SCMP_CMP_EQ, AF_VSOCK))) < 0)
		return rc;
	/* Typing into a terminal's input queue (TIOCSTI) and the console ioctls. */
	if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
	                           SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCSTI))) < 0)
		return rc;
	if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
	                           SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCLINUX))) < 0)
		return rc;
	return 0;
}

/* Builds the filter; calls of other architectures (32-bit on a 64-bit
 * host) hit libseccomp's default bad-architecture action and kill. */
static scmp_filter_ctx
build(char *err, size_t len)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx) {
		snprintf(err, len, "cannot create a seccomp filter (libseccomp)");
		return NULL;
	}
	int rc = add_rules(ctx);
	if (rc < 0) {
		snprintf(err, len, "cannot build the seccomp filter: %s", strerror(-rc));
		seccomp_release(ctx);
		return NULL;
	}
	return ctx;
}

int
iso_seccomp_check(char *err, size_t len)
{
	scmp_filter_ctx ctx = build(err, len);
	if (!ctx)
		return -1;
	seccomp_release(ctx);
	return 0;
}

int
iso_seccomp_load(char *err, size_t len)
{
	scmp_filter_ctx ctx = build(err, len);
	if (!ctx)
		return -1;
	int rc = seccomp_load(ctx);
	seccomp_release(ctx);
	if (rc < 0) {
		snprintf(err, len, "cannot load the seccomp filter: %s (the kernel needs "
		         "CONFIG_SECCOMP_FILTER)", strerror(-rc));
		return -1;
	}
	return 0;
}

#else /* !HAVE_SECCOMP */

int
iso_seccomp_check(char *err, size_t len)
{
	snprintf(err, len, "this build has no seccomp filter (libseccomp was missing at configure "
	         "time), so isolation refuses to run; install libseccomp-dev and rebuild");
	return -1;
}

int
iso_seccomp_load(char *err, size_t len)
{
	return iso_seccomp_check(err, len);
}

#endif
