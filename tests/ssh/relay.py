#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Loopback TCP relay for the ssh backend's tests.

relay.py TARGET_PORT CUT_FILE PORT_FILE: listens on a free 127.0.0.1 port
(written to PORT_FILE) and forwards every connection to TARGET_PORT.  When
CUT_FILE appears, every open connection is cut (both sides shut down) and
the file is removed; new connections are accepted as before.  A CUT_FILE
that contains "hold" also refuses new connections until it is removed by
the test (the relay then removes nothing)."""
import os, socket, sys, threading, time

target, cut_file, port_file = int(sys.argv[1]), sys.argv[2], sys.argv[3]
conns, lock = [], threading.Lock()


def pump(a, b):
    try:
        while True:
            d = a.recv(65536)
            if not d:
                break
            b.sendall(d)
    except OSError:
        pass
    for s in (a, b):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def cut():
    with lock:
        for s in conns:
            try:
                s.shutdown(socket.SHUT_RDWR)
                s.close()
            except OSError:
                pass
        conns.clear()


def holding():
    try:
        with open(cut_file) as f:
            return f.read().startswith("hold")
    except OSError:
        return False


def watcher():
    while True:
        if os.path.exists(cut_file):
            cut()
            if not holding():
                try:
                    os.unlink(cut_file)
                except OSError:
                    pass
        time.sleep(0.02)


threading.Thread(target=watcher, daemon=True).start()
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 0))
srv.listen(16)
with open(port_file + ".tmp", "w") as f:
    f.write(str(srv.getsockname()[1]))
os.rename(port_file + ".tmp", port_file)
srv.settimeout(1)
end = time.time() + 600
while time.time() < end:
    try:
        c, _ = srv.accept()
    except socket.timeout:
        continue
    if holding():
        c.close()
        continue
    try:
        t = socket.create_connection(("127.0.0.1", target))
    except OSError:
        c.close()
        continue
    with lock:
        conns.extend([c, t])
    threading.Thread(target=pump, args=(c, t), daemon=True).start()
    threading.Thread(target=pump, args=(t, c), daemon=True).start()
