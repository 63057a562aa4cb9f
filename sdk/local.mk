# SPDX-License-Identifier: MIT
# The public plugin SDK: the ABI header, the fake host and the pkg-config file.
hsincludedir = $(includedir)/hs
hsinclude_HEADERS = sdk/hs/backend.h sdk/hs/fakehost.h sdk/hs/hsb.h

# libhsb: the backend helper library (sdk/hs/hsb.h), installed for
# out-of-tree plugins and linked into hs and the in-tree plugins.  Built
# position-independent (it goes into shared objects) with hidden
# visibility (a plugin exports only hs_backend_v1); the directory-chain
# check it shares with the core takes libhsb's prefix here.
lib_LIBRARIES += plugins/common/libhsb.a
plugins_common_libhsb_a_SOURCES = plugins/common/hsb-run.c plugins/common/hsb-attach.c \
	plugins/common/hsb-int.h \
	runner/dirchain.c runner/dirchain.h
plugins_common_libhsb_a_CPPFLAGS = $(AM_CPPFLAGS) -Dhs_dirchain_open=hsb_dirchain_open
plugins_common_libhsb_a_CFLAGS = $(AM_CFLAGS) -fPIC -fvisibility=hidden

lib_LIBRARIES += sdk/libhsfakehost.a
sdk_libhsfakehost_a_SOURCES = sdk/fakehost.c
sdk_libhsfakehost_a_CFLAGS = $(AM_CFLAGS) -fPIC

pkgconfigdir = $(libdir)/pkgconfig
pkgconfig_DATA = sdk/hs-backend.pc

EXTRA_DIST += sdk/example/example.c sdk/example/test-example.c sdk/example/Makefile \
	sdk/hs-backend.pc.in sdk/hs-backend-uninstalled.pc.in
dist_man_MANS += man/hs-backend.7
exampledir = $(docdir)/example
example_DATA = sdk/example/example.c sdk/example/test-example.c sdk/example/Makefile
