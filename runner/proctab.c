/* SPDX-License-Identifier: MIT */
/* proctab.c - the processes of the machine (or of the sandbox's pid
 * namespace) as the runner sees them in /proc: the session shell finds a
 * command's processes in it, a shim the descendants it must stop. */
#include "runner.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int hsr_proc_table(struct hsr_proc **out)
{
	struct hsr_proc *t = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *dir = opendir("/proc");

	*out = NULL;
	if (!dir)
		return -1;
	while ((de = readdir(dir))) {
		char path[64], buf[1024], *rp;
		pid_t pid = (pid_t)atoi(de->d_name);
		unsigned long long start = 0;
		long ppid = 0;
		ssize_t len;
		int fd;

		if (pid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		len = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (len <= 0)
			continue;
		buf[len] = '\0';
		rp = strrchr(buf, ')');
		/* After the name: state ppid pgrp session tty tpgid flags minflt
		 * cminflt majflt cmajflt utime stime cutime cstime priority nice
		 * threads itrealvalue starttime. */
		if (!rp || sscanf(rp + 1, " %*c %ld %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u "
				  "%*d %*d %*d %*d %*d %*d %llu", &ppid, &start) != 2)
			continue;
		if (n == cap) {
			struct hsr_proc *nt = realloc(t, (cap ? cap * 2 : 256) * sizeof(*t));

			if (!nt)
				break;
			t = nt;
			cap = cap ? cap * 2 : 256;
		}
		t[n++] = (struct hsr_proc){ pid, (pid_t)ppid, start };
	}
	closedir(dir);
	*out = t;
	return (int)n;
}

struct hsr_proc *hsr_proc_find(struct hsr_proc *t, int n, pid_t pid)
{
	for (int i = 0; i < n; i++)
		if (t[i].pid == pid)
			return &t[i];
	return NULL;
}
