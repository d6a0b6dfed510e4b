"""Stack users: the credential an agent on a server holds for one resource (pure).

Heat makes a user in its stack domain for a SOFTWARE_CONFIG server (its agent reads the
server's metadata) and for a deployment whose agent signals back (HEAT_SIGNAL: a password;
CFN_SIGNAL: a pre-signed URL), and lets that user do nothing else. Ember's own identity
endpoint (keystone mode) does the same with a credential of its own: an id, and a random
secret of which only the hash is stored. The secret is the password a stack user
authenticates with, and the signature of the resource's signal URL, which works without a
token. A plugin makes one with :func:`new` (from ``ctx.rng``) and asks the worker to store
its hash (:meth:`StackUser.grant` as ``Call.stack_user`` or ``Store.stack_user``) in the
transaction that records the secret in the resource's data; the row goes with the resource's.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import random
from typing import Any, Final

# The signal URL's query parameter carrying the resource's secret.
SIGNATURE: Final = "ember_signature"
_ALPHABET: Final = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


@dataclasses.dataclass(frozen=True)
class StackUserGrant:
    """What the worker stores: the credential of the resource it steps, by hash only."""

    id: str
    secret_hash: str


@dataclasses.dataclass(frozen=True)
class StackUser:
    """A credential as the plugin knows it (the secret is in the resource's data)."""

    id: str
    secret: str

    @property
    def secret_hash(self) -> str:
        return digest(self.secret)

    def grant(self) -> StackUserGrant:
        return StackUserGrant(id=self.id, secret_hash=self.secret_hash)


def digest(secret: str) -> str:
    # A leaked table must not hand out working credentials: only the hash is stored.
    return hashlib.sha256(secret.encode()).hexdigest()


def matches(secret: str, secret_hash: str) -> bool:
    return hmac.compare_digest(digest(secret), secret_hash)


def new(rng: random.Random) -> StackUser:
    """A fresh credential; ``rng`` is the step's (the worker's is ``SystemRandom``)."""
    user_id = f"{rng.getrandbits(128):032x}"
    secret = "".join(rng.choice(_ALPHABET) for _ in range(43))  # ~256 bits
    return StackUser(id=user_id, secret=secret)


def of(value: Any) -> StackUser | None:
    """The credential kept in a resource's data (``{"id", "secret"}``), if it is one."""
    if isinstance(value, dict) and isinstance(value.get("id"), str) and isinstance(value.get("secret"), str):
        return StackUser(id=value["id"], secret=value["secret"])
    return None


def kept(user: StackUser) -> dict[str, str]:
    return {"id": user.id, "secret": user.secret}


def signed(url: str, user: StackUser) -> str:
    """The signal URL that needs no token: the resource's secret in its query (letters and digits
    alone, so nothing in it needs quoting)."""
    return f"{url}{'&' if '?' in url else '?'}{SIGNATURE}={user.secret}"
