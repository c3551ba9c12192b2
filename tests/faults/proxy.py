"""A TCP proxy between the application and PostgreSQL that a test can freeze (stop forwarding, as a hung
host or network does) or kill (drop every connection and refuse new ones), then restore."""

import contextlib
import selectors
import socket
import threading


class FaultProxy:
    def __init__(self, upstream: tuple[str, int] | str):
        self.upstream = upstream  # (host, port), or a Unix socket path
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.flowing = threading.Event()
        self.flowing.set()
        self.refusing = False
        self.pairs: list[tuple[socket.socket, socket.socket]] = []
        self.lock = threading.Lock()
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _connect_upstream(self) -> socket.socket:
        if isinstance(self.upstream, str):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.connect(self.upstream)
            return sock
        return socket.create_connection(self.upstream)

    def _accept(self) -> None:
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.refusing:
                client.close()
                continue
            server = self._connect_upstream()
            with self.lock:
                self.pairs.append((client, server))
            threading.Thread(target=self._pump, args=(client, server), daemon=True).start()

    def _pump(self, client: socket.socket, server: socket.socket) -> None:
        selector = selectors.DefaultSelector()
        selector.register(client, selectors.EVENT_READ, server)
        selector.register(server, selectors.EVENT_READ, client)
        try:
            while not self.closed:
                self.flowing.wait()  # frozen: nothing is read, so nothing goes either way
                for key, _ in selector.select(timeout=0.1):
                    if not self.flowing.is_set():
                        break
                    data = key.fileobj.recv(65536)
                    if not data:
                        return
                    key.data.sendall(data)
        except OSError:
            return
        finally:
            selector.close()
            client.close()
            server.close()

    def freeze(self) -> None:
        self.flowing.clear()

    def thaw(self) -> None:
        self.flowing.set()

    def kill(self) -> None:
        """Drop every connection and refuse new ones, as a stopped server does."""
        self.refusing = True
        with self.lock:
            pairs, self.pairs = self.pairs, []
        for client, server in pairs:
            for sock in (client, server):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def revive(self) -> None:
        self.refusing = False

    def close(self) -> None:
        self.closed = True
        self.flowing.set()
        self.kill()
        self.listener.close()
