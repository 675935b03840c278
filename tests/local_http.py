"""The one HTTP server the tests run: bound to 127.0.0.1, every request handled in its own thread with a
socket timeout, one request per connection, and every thread joined when the test's block ends.

:mod:`tests.data_mirror` (the data's upstream hosts) and :mod:`tests.hub_server` (the model hub) give it
their request handler class.
"""

from __future__ import annotations

import contextlib
import http.server
import threading

#: Seconds a handler waits on a silent client before it gives up (bounds every request's thread).
REQUEST_TIMEOUT = 10


class Handler(http.server.BaseHTTPRequestHandler):
    """A handler whose connection closes after one response and whose reads time out."""

    protocol_version = "HTTP/1.0"
    timeout = REQUEST_TIMEOUT
    requested: list  # (method, path) of each request, filled in by the subclass a server is given

    def log_message(self, format, *args):
        pass

    def note(self) -> None:
        self.requested.append((self.command, self.path))


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = False  # joined by server_close, so no thread outlives the block
    block_on_close = True


@contextlib.contextmanager
def serving(handler_class, port: int = 0):
    """Run ``handler_class`` on 127.0.0.1 (``port`` 0: any free one); yield (base URL, the server).

    On leaving the block the server stops, every request thread is joined and the socket closed."""
    server = _Server(("127.0.0.1", port), handler_class)
    thread = threading.Thread(target=server.serve_forever, name=f"local-http-{server.server_address[1]}")
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=REQUEST_TIMEOUT + 5)
        assert not thread.is_alive(), "the local server's thread did not stop"


def live_server_threads() -> list[threading.Thread]:
    """Threads of :func:`serving` (a server loop or a request's handler) still running in this process."""
    return [t for t in threading.enumerate()
            if t.name.startswith("local-http-") or "process_request_thread" in t.name]
