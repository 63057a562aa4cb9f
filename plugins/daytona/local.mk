# plugins/daytona: the daytona backend (see man/hs-daytona.7).
plugin_LTLIBRARIES += plugins/daytona/daytona.la
DT_SRCS = plugins/daytona/daytona.c plugins/daytona/dt-exec.c plugins/daytona/dt-http.c \
	plugins/daytona/dt-json.c plugins/daytona/dt.h
plugins_daytona_daytona_la_SOURCES = $(DT_SRCS)
plugins_daytona_daytona_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden $(CURL_CFLAGS) $(YAJL_CFLAGS)
plugins_daytona_daytona_la_LDFLAGS = -module -avoid-version -shared -export-symbols-regex '^hs_backend_v1$$'
plugins_daytona_daytona_la_LIBADD = $(CURL_LIBS) $(YAJL_LIBS) $(PTHREAD_LIBS)
