# plugins/modal: the modal backend (see man/hs-modal.7).
plugin_LTLIBRARIES += plugins/modal/modal.la
plugins_modal_modal_la_SOURCES = plugins/modal/modal.c plugins/modal/modal.h \
	plugins/modal/direct.c plugins/modal/managed.c \
	plugins/modal/grpc.c plugins/modal/grpc.h plugins/modal/pb.c plugins/modal/pb.h
plugins_modal_modal_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden $(CURL_CFLAGS) $(YAJL_CFLAGS)
plugins_modal_modal_la_LDFLAGS = -module -avoid-version -shared -export-symbols-regex '^hs_backend_v1$$'
plugins_modal_modal_la_LIBADD = $(CURL_LIBS) $(YAJL_LIBS) $(PTHREAD_LIBS)
dist_confd_DATA += conf/conf.d/modal.conf
EXTRA_DIST += plugins/modal/modal.proto
