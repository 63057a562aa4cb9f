# SPDX-License-Identifier: MIT
# Layered configuration (core/config/hsconf*.c), its shipped file, man page and tests.
# Included from the top Makefile.am; paths are relative to the top directory.
#
# libhsconf.a does not contain core/pathsec.c nor runner/dirchain.c (the core
# has them itself); a program linking libhsconf.a links both too, as the test
# below does.

noinst_LIBRARIES += core/config/libhsconf.a
core_config_libhsconf_a_SOURCES = \
	core/config/hsconf.c \
	core/config/hsconf-get.c \
	core/config/hsconf-file.c \
	core/config/hsconf-schema.c \
	core/config/hsconf-declare.c
core_config_libhsconf_a_CFLAGS = $(AM_CFLAGS) $(LIBCONFIG_CFLAGS)
noinst_HEADERS += core/config/hsconf.h core/config/hsconf-int.h core/config/hsconf-schema.h

# The shipped admin file goes to $(sysconfdir)/hs/hs.conf (it is in EXTRA_DIST already).
hsconfdir = $(sysconfdir)/hs
hsconf_DATA = conf/hs.conf
EXTRA_DIST += conf/conf.d/README
dist_man_MANS += man/hs.conf.5

check_PROGRAMS += tests/config/test-hsconf
TESTS += tests/config/test-hsconf
tests_config_test_hsconf_SOURCES = tests/config/test-hsconf.c core/pathsec.c runner/dirchain.c
tests_config_test_hsconf_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS) $(LIBCONFIG_CFLAGS)
tests_config_test_hsconf_LDADD = core/config/libhsconf.a $(LIBCONFIG_LIBS) $(CMOCKA_LIBS)
