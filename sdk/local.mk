# The public plugin SDK: the ABI header, the fake host and the pkg-config file.
hsincludedir = $(includedir)/hs
hsinclude_HEADERS = sdk/hs/backend.h sdk/hs/fakehost.h

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
