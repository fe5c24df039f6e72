"""What every fake server in tests/fake/ shares: listen on 127.0.0.1 at a
port the OS picks, say it as "PORT <n>" (the first line on stdout, which
tests/fake/spawn.h and tests/e2e/lib.sh read), and, with
--exit-on-stdin-eof, exit when stdin closes, so a test that crashes leaves
no server behind.  Python 3 standard library only.
"""
import os
import sys
import threading
from http.server import HTTPServer, ThreadingHTTPServer


class Server(ThreadingHTTPServer):
    """A threaded server on loopback, quiet about clients that go away."""
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # a client that timed out and left is not an error here


def watch_stdin():
    try:
        while sys.stdin.buffer.read(4096):
            pass
    finally:
        os._exit(0)


def listen(handler, threaded=True, addr="127.0.0.1"):
    """A server for handler on addr (loopback unless a test gives the
    booting fake EC2's host address), port chosen by the OS."""
    return (Server if threaded else HTTPServer)((addr, 0), handler)


def serve(server, exit_on_stdin_eof):
    """Announce the port, then serve until killed (or stdin closes)."""
    print("PORT %d" % server.server_address[1], flush=True)
    if exit_on_stdin_eof:
        threading.Thread(target=watch_stdin, daemon=True).start()
    server.serve_forever()
