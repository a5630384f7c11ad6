"""Showing a new API token once, after a redirect, without its secret in the session cookie.

Creating a token answers with a redirect to the account page (a reload then creates nothing).
The secret must survive that redirect, yet the session cookie is signed, not encrypted, and
the database keeps only the secret's hash. So the secret is *derived*: an HMAC of a random seed
under the server's secret key. The cookie carries the seed, which is worthless without that
key; the account page pops it, derives the secret again and shows it once, if it is still a
fresh, unrevoked token of the same user.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

from fastapi import Request

from medvidbench.server.services.accounts import TOKEN_PREFIX

SESSION_KEY = "new_token_seed"


def _derive(key: str, seed: str) -> str:
    digest = hmac.new(key.encode(), b"api-token:" + seed.encode(), hashlib.sha256).digest()
    return TOKEN_PREFIX + base64.urlsafe_b64encode(digest).decode().rstrip("=")


def new_secret(request: Request, key: str) -> str:
    """A fresh token secret; its seed waits in the session for the next page."""
    seed = secrets.token_urlsafe(32)
    request.session[SESSION_KEY] = seed
    return _derive(key, seed)


def pop_secret(request: Request, key: str) -> str | None:
    """The secret created just before this page, once (None on every later view)."""
    seed = request.session.pop(SESSION_KEY, None)
    return _derive(key, str(seed)) if seed else None
