"""Whose ``X-Forwarded-*`` headers are believed (``MEDVIDBENCH_TRUSTED_PROXIES``).

A proxy appends the address it saw to ``X-Forwarded-For``; everything to the left of its entry
came from the visitor and may be forged. The visitor's address is therefore the nearest
untrusted hop: walking the list from the right, the first address that is not a trusted proxy.
``*`` trusts whichever peer connects as the one proxy in front, so the visitor is the last
entry (the one that proxy appended), never the first (which anyone can write). From a peer
that is not trusted the headers change nothing.

Plain ASGI, so it works under any server; in front of uvicorn's own proxy middleware (plain
``uvicorn --proxy-headers``, which takes the first entry under ``*``) it derives the address
again from the headers, which uvicorn leaves in place.
"""

from __future__ import annotations

import ipaddress
from typing import Any

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    text = text.strip()
    if text.startswith("[") and "]" in text:  # [v6]:port
        text = text[1 : text.index("]")]
    elif text.count(":") == 1:  # v4:port
        text = text.split(":")[0]
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


class TrustedProxies:
    """The setting, parsed: ``*``, or addresses and networks."""

    def __init__(self, setting: str) -> None:
        entries = [e.strip() for e in setting.split(",") if e.strip()]
        self.any_peer = "*" in entries
        self.networks: list[Network] = [
            ipaddress.ip_network(e, strict=False) for e in entries if e != "*"
        ]

    def trusts(self, host: str | None) -> bool:
        """Whether a connection from ``host`` is a trusted proxy's."""
        if host is None:
            return False
        if self.any_peer:
            return True
        found = _address(host)
        return found is not None and any(found in net for net in self.networks)

    def visitor(self, forwarded_for: str) -> str | None:
        """The visitor's address in a trusted peer's ``X-Forwarded-For`` (None: the header
        names none that is an address, so the peer's own address stands).

        Examples:
            >>> TrustedProxies("*").visitor("10.0.0.5, 203.0.113.9")
            '203.0.113.9'
            >>> TrustedProxies("10.0.0.0/8").visitor("198.51.100.1, 203.0.113.9, 10.0.0.7")
            '203.0.113.9'
        """
        hops = [h.strip() for h in forwarded_for.split(",") if h.strip()]
        if not hops:
            return None
        if not self.any_peer:
            for hop in reversed(hops):
                found = _address(hop)
                if found is None or not any(found in net for net in self.networks):
                    return str(found) if found is not None else None
        # '*', or every hop a trusted proxy: the nearest one's entry
        found = _address(hops[-1] if self.any_peer else hops[0])
        return str(found) if found is not None else None


class ForwardedHeaders:
    """ASGI middleware: the visitor's address and scheme from a trusted proxy's headers."""

    def __init__(self, app: Any, trusted: str) -> None:
        self.app = app
        self.trusted = TrustedProxies(trusted)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket"):
            client = scope.get("client")
            if self.trusted.trusts(client[0] if client else None):
                self._rewrite(scope)
        await self.app(scope, receive, send)

    def _rewrite(self, scope: dict[str, Any]) -> None:
        forwarded, proto = [], None
        for name, value in scope["headers"]:
            if name == b"x-forwarded-for":
                forwarded.append(value.decode("latin-1"))
            elif name == b"x-forwarded-proto":
                proto = value.decode("latin-1").split(",")[-1].strip().lower()
        if proto in ("http", "https"):
            scope["scheme"] = proto if scope["type"] == "http" else proto.replace("http", "ws")
        visitor = self.trusted.visitor(",".join(forwarded)) if forwarded else None
        if visitor is not None:
            scope["client"] = (visitor, 0)
