# HS_DEP(VAR, MODULES, DEBIAN-PACKAGE): pkg-config check that records a
# missing dependency with the Debian package that provides it.
AC_DEFUN([HS_DEP], [
  PKG_CHECK_MODULES([$1], [$2], [],
    [missing="$missing
    $2 (Debian package: $3)"])
])
# AX_PTHREAD_SIMPLE: glibc has pthreads in libc; -pthread is all that is needed.
AC_DEFUN([AX_PTHREAD_SIMPLE], [
  PTHREAD_CFLAGS=-pthread
  PTHREAD_LIBS=-pthread
  AC_SUBST([PTHREAD_CFLAGS])
  AC_SUBST([PTHREAD_LIBS])
])
