"""Loaded by every Python process the tests start (tests put this folder on PYTHONPATH): refuse any network
connection that is not to loopback, so Segue's list/brief/resume/token paths are proven offline."""

from __future__ import annotations

import ipaddress
import socket

_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex
_real_sendto = socket.socket.sendto


class NetworkBlocked(OSError):
    pass


def _allowed(sock: socket.socket, address: object) -> bool:
    if sock.family not in (socket.AF_INET, socket.AF_INET6):
        return True  # unix sockets (pipes to child processes, tmux) are local
    host = address[0] if isinstance(address, tuple) and address else address
    if not isinstance(host, str):
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False  # a name that would need DNS


def _connect(self: socket.socket, address: object) -> None:
    if not _allowed(self, address):
        raise NetworkBlocked(f"segue tests: network access to {address!r} is blocked (loopback only)")
    return _real_connect(self, address)


def _connect_ex(self: socket.socket, address: object) -> int:
    if not _allowed(self, address):
        raise NetworkBlocked(f"segue tests: network access to {address!r} is blocked (loopback only)")
    return _real_connect_ex(self, address)


def _sendto(self: socket.socket, data: bytes, *args: object) -> int:
    address = args[-1]
    if not _allowed(self, address):
        raise NetworkBlocked(f"segue tests: network access to {address!r} is blocked (loopback only)")
    return _real_sendto(self, data, *args)  # type: ignore[arg-type]


socket.socket.connect = _connect  # type: ignore[method-assign]
socket.socket.connect_ex = _connect_ex  # type: ignore[method-assign]
socket.socket.sendto = _sendto  # type: ignore[method-assign,assignment]
