/* SPDX-License-Identifier: MIT */
/*
 * loader.c - discovering, checking and loading backend plugins.
 *
 * A plugin file is trusted only after the descriptor we opened with
 * O_NOFOLLOW has been checked (regular file, owner root or the user, not
 * group/world-writable, same for every directory up to /, an ELF shared
 * object for this machine).  It is then loaded through /proc/self/fd/N, so
 * the file that was checked is the file that is loaded, whatever happens to
 * the path meanwhile.
 */
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/loader.h"
#include "core/pathsec.h"

#if __SIZEOF_POINTER__ == 8
#define HS_ELFCLASS ELFCLASS64
#else
#define HS_ELFCLASS ELFCLASS32
#endif

#if defined(__x86_64__)
#define HS_ELF_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define HS_ELF_MACHINE EM_AARCH64
#elif defined(__i386__)
#define HS_ELF_MACHINE EM_386
#elif defined(__powerpc64__)
#define HS_ELF_MACHINE EM_PPC64
#elif defined(__s390x__)
#define HS_ELF_MACHINE EM_S390
#elif defined(__riscv)
#define HS_ELF_MACHINE EM_RISCV
#endif

static int
valid_name(const char *s)
{
	size_t n = 0;
	for (; s[n]; n++)
		if (!(islower((unsigned char)s[n]) || isdigit((unsigned char)s[n]) ||
		      s[n] == '-' || s[n] == '_'))
			return 0;
	return n > 0 && n < 32;
}

int
hs_loader_validate(const struct hs_backend_v1 *be, size_t symsize, const char *name,
                   char *reason, size_t len)
{
	const size_t header = offsetof(struct hs_backend_v1, reserved0);

	if (symsize && symsize < header) {
		snprintf(reason, len, "descriptor is %zu bytes, too small for the ABI header", symsize);
		return -1;
	}
	if (be->abi_major != HS_ABI_MAJOR) {
		snprintf(reason, len, "wrong ABI major %u (core has %u)", be->abi_major, HS_ABI_MAJOR);
		return -1;
	}
	if (be->abi_minor > HS_ABI_MINOR) {
		snprintf(reason, len, "newer ABI minor %u.%u (core has %u.%u): upgrade hs",
		         be->abi_major, be->abi_minor, HS_ABI_MAJOR, HS_ABI_MINOR);
		return -1;
	}
	if (be->struct_size < HS_BACKEND_V1_MIN_SIZE) {
		snprintf(reason, len, "short descriptor: struct_size %u (ABI %u.0 needs at least %zu)",
		         be->struct_size, HS_ABI_MAJOR, (size_t)HS_BACKEND_V1_MIN_SIZE);
		return -1;
	}
	if (symsize && symsize < be->struct_size) {
		snprintf(reason, len, "short descriptor: the symbol is %zu bytes but struct_size says %u",
		         symsize, be->struct_size);
		return -1;
	}
	if (!be->build_sig || strcmp(be->build_sig, HS_BUILD_SIG) != 0) {
		snprintf(reason, len, "not binary compatible: build signature '%.40s' (core has '%s')",
		         be->build_sig ? be->build_sig : "(null)", HS_BUILD_SIG);
		return -1;
	}
	if (!be->name || !valid_name(be->name)) {
		snprintf(reason, len, "invalid backend name (want 1-31 of [a-z0-9_-])");
		return -1;
	}
	if (name && strcmp(name, be->name) != 0) {
		snprintf(reason, len, "backend name '%s' does not match its file name '%s.so'",
		         be->name, name);
		return -1;
	}
	if (!be->version || !be->summary) {
		snprintf(reason, len, "descriptor lacks %s", !be->version ? "a version" : "a summary");
		return -1;
	}
	const char *missing = !be->open ? "open" : !be->close ? "close"
	                    : (!be->runner_stream && !be->exec) ? "runner_stream or exec" : NULL;
	if (missing) {
		snprintf(reason, len, "missing required op '%s'", missing);
		return -1;
	}
	if ((be->caps & HS_CAP_RUNNER) && !be->runner_stream) {
		snprintf(reason, len, "claims the runner capability without runner_stream");
		return -1;
	}
	if ((be->caps & HS_CAP_EXEC) && !be->exec) {
		snprintf(reason, len, "claims the exec capability without exec");
		return -1;
	}
	return 0;
}

/* Check the ELF identification: a shared object for this machine. */
static int
check_elf(int fd, char *reason, size_t len)
{
	union {
		unsigned char ident[EI_NIDENT];
		ElfW(Ehdr) eh;
	} h;
	ssize_t n = pread(fd, &h, sizeof(h), 0);

	if (n < (ssize_t)SELFMAG || memcmp(h.ident, ELFMAG, SELFMAG) != 0) {
		snprintf(reason, len, "not an ELF file");
		return -1;
	}
	if (n < (ssize_t)sizeof(h.eh) || h.ident[EI_CLASS] != HS_ELFCLASS) {
		snprintf(reason, len, "ELF file of another word size (class %u)", h.ident[EI_CLASS]);
		return -1;
	}
#ifdef HS_ELF_MACHINE
	if (h.eh.e_machine != HS_ELF_MACHINE) {
		snprintf(reason, len, "built for another architecture (ELF machine %u)", h.eh.e_machine);
		return -1;
	}
#endif
	if (h.eh.e_type != ET_DYN) {
		snprintf(reason, len, "not a shared object (ELF type %u)", h.eh.e_type);
		return -1;
	}
	return 0;
}

static void
base_name(const char *path, char *name, size_t len)
{
	const char *b = strrchr(path, '/');
	b = b ? b + 1 : path;
	size_t n = strlen(b);
	if (n > 3 && strcmp(b + n - 3, ".so") == 0)
		n -= 3;
	if (n >= len)
		n = len - 1;
	memcpy(name, b, n);
	name[n] = '\0';
}

int
hs_loader_load_file(const char *path, struct hs_plugin *p)
{
	char err[512], fdpath[64];
	const struct hs_backend_v1 *be;
	struct stat st;
	size_t symsize = 0;
	void *dl = NULL;
	int fd = -1;

	memset(p, 0, sizeof(*p));
	snprintf(p->path, sizeof(p->path), "%s", path);
	base_name(path, p->name, sizeof(p->name));
	p->refused = 1;

	if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
		snprintf(p->reason, sizeof(p->reason), "is a symbolic link (plugins must be regular files)");
		return -1;
	}
	fd = hs_pathsec_open(path, O_RDONLY, err, sizeof(err));
	if (fd < 0) {
		snprintf(p->reason, sizeof(p->reason), "%s", err);
		return -1;
	}
	if (check_elf(fd, p->reason, sizeof(p->reason)) < 0)
		goto fail;
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
	dlerror();
	dl = dlopen(fdpath, RTLD_NOW | RTLD_LOCAL);
	if (!dl) {
		const char *e = dlerror();
		snprintf(p->reason, sizeof(p->reason), "cannot load: %s", e ? e : "unknown dlopen error");
		goto fail;
	}
	be = dlsym(dl, "hs_backend_v1");
	if (!be) {
		snprintf(p->reason, sizeof(p->reason), "no hs_backend_v1 symbol (not an hs backend)");
		goto fail;
	}
	{
		Dl_info info;
		const ElfW(Sym) *sym = NULL;
		if (dladdr1(be, &info, (void **)&sym, RTLD_DL_SYMENT) && sym)
			symsize = sym->st_size;
	}
	if (hs_loader_validate(be, symsize, p->name, p->reason, sizeof(p->reason)) < 0)
		goto fail;
	memcpy(&p->desc, be, be->struct_size < sizeof(p->desc) ? be->struct_size : sizeof(p->desc));
	snprintf(p->version, sizeof(p->version), "%s", be->version);
	snprintf(p->summary, sizeof(p->summary), "%s", be->summary);
	p->runner_stream = p->desc.runner_stream != NULL;
	p->dl = dl;
	p->refused = 0;
	p->reason[0] = '\0';
	close(fd);
	return 0;
fail:
	/* Never dlclose: a constructor may have started threads. */
	if (fd >= 0)
		close(fd);
	return -1;
}

static int
cmp_plugin(const void *a, const void *b)
{
	return strcmp(((const struct hs_plugin *)a)->path, ((const struct hs_plugin *)b)->path);
}

int
hs_loader_scan(const char *const *dirs, size_t n_dirs, struct hs_plugin **out, size_t *n_out)
{
	struct hs_plugin *v = NULL;
	size_t n = 0, cap = 0;

	for (size_t i = 0; i < n_dirs; i++) {
		char err[512];
		struct stat st;
		size_t first = n;
		DIR *d;

		if (stat(dirs[i], &st) < 0 || !S_ISDIR(st.st_mode))
			continue;
		int dirbad = hs_pathsec_check_stat(&st, dirs[i], err, sizeof(err)) < 0;
		if (!dirbad) {
			char probe[PATH_MAX];
			snprintf(probe, sizeof(probe), "%s/.", dirs[i]);
			dirbad = hs_pathsec_check_parents(probe, err, sizeof(err)) < 0;
		}
		if (dirbad) {
			if (n == cap) {
				cap = cap ? cap * 2 : 16;
				struct hs_plugin *nv = realloc(v, cap * sizeof(*v));
				if (!nv)
					goto nomem;
				v = nv;
			}
			memset(&v[n], 0, sizeof(v[n]));
			snprintf(v[n].path, sizeof(v[n].path), "%s", dirs[i]);
			snprintf(v[n].name, sizeof(v[n].name), "(directory)");
			v[n].refused = 1;
			snprintf(v[n].reason, sizeof(v[n].reason), "plugin directory refused: %s", err);
			n++;
			continue;
		}
		d = opendir(dirs[i]);
		if (!d)
			continue;
		for (struct dirent *e; (e = readdir(d));) {
			size_t len = strlen(e->d_name);
			if (len <= 3 || strcmp(e->d_name + len - 3, ".so") != 0 || e->d_name[0] == '.')
				continue;
			if (n == cap) {
				cap = cap ? cap * 2 : 16;
				struct hs_plugin *nv = realloc(v, cap * sizeof(*v));
				if (!nv) {
					closedir(d);
					goto nomem;
				}
				v = nv;
			}
			memset(&v[n], 0, sizeof(v[n]));
			snprintf(v[n].path, sizeof(v[n].path), "%s/%s", dirs[i], e->d_name);
			base_name(e->d_name, v[n].name, sizeof(v[n].name));
			n++;
		}
		closedir(d);
		/* Directory order is arbitrary; make listings stable. */
		qsort(v + first, n - first, sizeof(*v), cmp_plugin);
	}
	*out = v;
	*n_out = n;
	return 0;
nomem:
	free(v);
	return -1;
}

int
hs_loader_find(const char *const *dirs, size_t n_dirs, const char *name, struct hs_plugin *p)
{
	char path[PATH_MAX];
	struct stat st;

	if (!valid_name(name)) {
		memset(p, 0, sizeof(*p));
		p->refused = 1;
		snprintf(p->reason, sizeof(p->reason), "invalid backend name '%.40s'", name);
		return -1;
	}
	for (size_t i = 0; i < n_dirs; i++) {
		snprintf(path, sizeof(path), "%s/%s.so", dirs[i], name);
		if (lstat(path, &st) < 0)
			continue;
		char err[512];
		if (stat(dirs[i], &st) == 0 && hs_pathsec_check_stat(&st, dirs[i], err, sizeof(err)) < 0) {
			memset(p, 0, sizeof(*p));
			snprintf(p->path, sizeof(p->path), "%s", path);
			p->refused = 1;
			snprintf(p->reason, sizeof(p->reason), "plugin directory refused: %s", err);
			return -1;
		}
		return hs_loader_load_file(path, p);
	}
	return 1;
}

/* What a validating child sends back. */
struct check_msg {
	int32_t refused;
	char reason[512];
	char version[64];
	char summary[256];
	int32_t probed;
	int32_t runner_stream; /* the descriptor has runner_stream (pointers stay in the child) */
	int32_t probe_status;
	char probe_err[HS_ERR_MAX];
	struct hs_probe_report report;
};

static void
write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len > 0) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p += w;
		len -= (size_t)w;
	}
}

/* Child side: load, validate and optionally probe, then report. */
static void __attribute__((noreturn))
check_child(int wfd, const char *path, struct hs_probe_report *probe, hs_host_maker make_host,
            void *host_ctx, int probe_flags)
{
	struct check_msg *m = calloc(1, sizeof(*m));
	struct hs_plugin p;

	if (!m)
		_exit(1);
	if (hs_loader_load_file(path, &p) < 0) {
		m->refused = 1;
		snprintf(m->reason, sizeof(m->reason), "%s", p.reason);
	} else {
		snprintf(m->version, sizeof(m->version), "%s", p.desc.version);
		snprintf(m->summary, sizeof(m->summary), "%s", p.desc.summary);
		m->runner_stream = p.desc.runner_stream != NULL;
		if (probe && make_host) {
			const struct hs_host_v1 *host = make_host(&p.desc, host_ctx, m->probe_err);
			void *state = NULL;
			m->probed = 1;
			if (!host) {
				m->probe_status = HS_E_CONFIG;
			} else if (!p.desc.init) {
				m->probe_status = HS_OK;
			} else {
				m->probe_status = p.desc.init(host, &state, m->probe_err);
			}
			if (m->probe_status == HS_OK && p.desc.probe)
				m->probe_status = p.desc.probe(state, (uint32_t)probe_flags, &m->report,
				                               m->probe_err);
			else if (m->probe_status == HS_OK)
				m->report.ready = 1;
			if (m->probe_status == HS_OK && p.desc.fini)
				p.desc.fini(state);
			if (m->probe_status != HS_OK && !m->probe_err[0])
				snprintf(m->probe_err, sizeof(m->probe_err), "%s",
				         hs_strerror(m->probe_status));
		}
	}
	write_all(wfd, m, sizeof(*m));
	_exit(0);
}

int
hs_loader_check_forked(struct hs_plugin *p, struct hs_probe_report *probe, int32_t *probe_status,
                       char *probe_err, hs_host_maker make_host, void *host_ctx, int probe_flags)
{
	struct check_msg *m = calloc(1, sizeof(*m));
	size_t got = 0;
	int pfd[2], status = 0;
	pid_t pid;

	if (!m || pipe2(pfd, O_CLOEXEC) < 0) {
		free(m);
		p->refused = 1;
		snprintf(p->reason, sizeof(p->reason), "cannot check: %s", strerror(errno));
		return -1;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		free(m);
		p->refused = 1;
		snprintf(p->reason, sizeof(p->reason), "cannot fork to check: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		close(pfd[0]);
		/* A plugin's noise on stdout must not corrupt our output. */
		int null = open("/dev/null", O_WRONLY);
		if (null >= 0) {
			dup2(null, 1);
			close(null);
		}
		check_child(pfd[1], p->path, probe, make_host, host_ctx, probe_flags);
	}
	close(pfd[1]);
	/* A plugin that hangs while loading or probing gets 20 seconds. */
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int hung = 0;
	while (got < sizeof(*m)) {
		struct pollfd pf = { pfd[0], POLLIN, 0 };
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		long left = 20000 - ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000);
		if (left <= 0) {
			hung = 1;
			kill(pid, SIGKILL);
			break;
		}
		int r = poll(&pf, 1, (int)left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			continue;
		ssize_t n = read(pfd[0], (char *)m + got, sizeof(*m) - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(pfd[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (got < sizeof(*m)) {
		p->refused = 1;
		if (hung)
			snprintf(p->reason, sizeof(p->reason), "hung while loading (killed after 20 s)");
		else if (WIFSIGNALED(status))
			snprintf(p->reason, sizeof(p->reason), "crashed while loading (signal %d, %s)",
			         WTERMSIG(status), strsignal(WTERMSIG(status)));
		else
			snprintf(p->reason, sizeof(p->reason), "exited while loading (status %d)",
			         WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		free(m);
		return -1;
	}
	p->refused = m->refused;
	snprintf(p->reason, sizeof(p->reason), "%s", m->reason);
	snprintf(p->version, sizeof(p->version), "%s", m->version);
	snprintf(p->summary, sizeof(p->summary), "%s", m->summary);
	p->runner_stream = m->runner_stream;
	if (probe && m->probed) {
		*probe = m->report;
		if (probe_status)
			*probe_status = m->probe_status;
		if (probe_err)
			snprintf(probe_err, HS_ERR_MAX, "%s", m->probe_err);
	}
	free(m);
	return p->refused ? -1 : 0;
}
