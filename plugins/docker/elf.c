/* SPDX-License-Identifier: MIT */
/*
 * elf.c - whether the host's hs-runner can run inside an image: it must be
 * statically linked and built for the image's architecture.  Otherwise the
 * backend runs one exec per command.
 */
#include "config.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "plugins/docker/docker.h"

static const struct {
	const char *arch;
	int machine;
} dk_arches[] = {
	{ "amd64", EM_X86_64 }, { "arm64", EM_AARCH64 }, { "386", EM_386 },
	{ "arm", EM_ARM },      { "ppc64le", EM_PPC64 }, { "s390x", EM_S390 },
	{ "riscv64", EM_RISCV }, { "mips64le", EM_MIPS },
};

int
dk_runner_fits(const char *runner, const char *arch, char *reason, size_t len)
{
	Elf64_Ehdr eh;
	int fd = runner ? open(runner, O_RDONLY | O_CLOEXEC) : -1;

	if (fd < 0) {
		snprintf(reason, len, "hs-runner not found (set runner_path or HS_RUNNER)");
		return -1;
	}
	if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64) {
		close(fd);
		snprintf(reason, len, "hs-runner '%s' is not a 64-bit ELF program", runner);
		return -1;
	}
	int dynamic = 0;
	for (int i = 0; i < eh.e_phnum && i < 64; i++) {
		Elf64_Phdr ph;
		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + (uint64_t)i * eh.e_phentsize)) !=
		    (ssize_t)sizeof(ph))
			break;
		if (ph.p_type == PT_INTERP)
			dynamic = 1;
	}
	close(fd);
	if (dynamic) {
		snprintf(reason, len, "hs-runner '%s' is dynamically linked and cannot run in an "
		         "arbitrary image", runner);
		return -1;
	}
	if (!arch || !*arch)
		return 0;
	for (size_t i = 0; i < sizeof(dk_arches) / sizeof(dk_arches[0]); i++) {
		if (strcmp(dk_arches[i].arch, arch) == 0) {
			if (dk_arches[i].machine == eh.e_machine)
				return 0;
			break;
		}
	}
	snprintf(reason, len, "the image is %s but hs-runner is built for ELF machine %d", arch,
	         eh.e_machine);
	return -1;
}
