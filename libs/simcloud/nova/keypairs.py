"""Nova's keypairs: per user, by name; a key generated when none is given (its private half answered once)."""

from __future__ import annotations

import base64
import binascii
import hashlib
from typing import Any

import asyncpg
from aiohttp import web
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from libs.simcloud import auth, jsonweb, listing
from libs.simcloud.errors import ApiError
from libs.simcloud.microversion import microversion_of
from libs.simcloud.state import STATE, iso


def fingerprint(public_key: str) -> str:
    """The MD5 fingerprint Nova shows, of the key's base64 blob; 400 when it is not an OpenSSH key."""
    parts = public_key.strip().split()
    try:
        if len(parts) < 2 or not parts[0].startswith(("ssh-", "ecdsa-")):
            raise ValueError(public_key)
        blob = base64.b64decode(parts[1], validate=True)
    except (ValueError, binascii.Error):
        raise ApiError(400, "Keypair data is invalid: failed to generate fingerprint") from None
    digest = hashlib.md5(blob, usedforsecurity=False).hexdigest()
    return ":".join(digest[i:i + 2] for i in range(0, len(digest), 2))


def generate() -> tuple[str, str]:
    """A new (private key in OpenSSH PEM, public key) pair."""
    key = ed25519.Ed25519PrivateKey.generate()
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                           serialization.PublicFormat.OpenSSH).decode()
    return private, public + " Generated-by-Nova"


def view(row: asyncpg.Record, request: web.Request, details: bool = True) -> dict[str, Any]:
    result: dict[str, Any] = {"name": row["name"], "public_key": row["public_key"],
                              "fingerprint": row["fingerprint"]}
    if microversion_of(request) >= (2, 2):
        result["type"] = row["type"]
    if details:
        result.update({"user_id": row["user_id"], "created_at": iso(row["created_at"]), "deleted": False,
                       "deleted_at": None, "updated_at": None, "id": row["seq"]})
    return result


def _user(request: web.Request, asked: str | None) -> str:
    caller = auth.auth_of(request)
    if asked and asked != caller.user_id:
        if not caller.is_admin:
            raise ApiError(403, "Policy doesn't allow os_compute_api:os-keypairs to be performed.")
        return asked
    return caller.user_id


async def list_keypairs(request: web.Request) -> web.Response:
    user_id = _user(request, request.query.get("user_id"))
    pages = listing.paging(request)
    where = listing.Where().eq("user_id", user_id)
    if pages.marker is not None:  # Nova's keypair marker is the name
        async with request.app[STATE].pool.acquire() as conn:
            marker_id = await conn.fetchval(
                "SELECT id FROM simcloud.keypairs WHERE user_id = $1 AND name = $2", user_id, pages.marker)
        pages = listing.Paging(pages.limit, marker_id or pages.marker)
    async with request.app[STATE].pool.acquire() as conn:
        rows = await listing.page(conn, "simcloud.keypairs", where, pages)
    items = [{"keypair": view(r, request, details=False)} for r in rows]
    return jsonweb.reply(listing.answer(request, "keypairs", items, [r["name"] for r in rows], pages))


async def show(request: web.Request) -> web.Response:
    user_id = _user(request, request.query.get("user_id"))
    name = request.match_info["name"]
    async with request.app[STATE].pool.acquire() as conn:
        row = await conn.fetchrow("SELECT * FROM simcloud.keypairs WHERE user_id = $1 AND name = $2",
                                  user_id, name)
    if row is None:
        raise ApiError(404, f"Keypair {name} not found for user {user_id}")
    return jsonweb.reply({"keypair": view(row, request)})


async def create(request: web.Request) -> web.Response:
    spec = await jsonweb.body(request, "keypair")
    state = request.app[STATE]
    user_id = _user(request, spec.get("user_id"))
    name = str(spec.get("name") or "").strip()
    if not name or len(name) > 255:
        raise ApiError(400, "Keypair data is invalid: Keypair name must be string and between 1 and 255 "
                            "characters long")
    private = None
    public = spec.get("public_key")
    if public is None:
        private, public = generate()
    row_fingerprint = fingerprint(str(public))
    async with state.pool.acquire() as conn:
        try:
            row = await conn.fetchrow(
                "INSERT INTO simcloud.keypairs (id, user_id, name, type, public_key, fingerprint)"
                " VALUES ($1, $2, $3, $4, $5, $6) RETURNING *",
                state.new_id(), user_id, name, str(spec.get("type") or "ssh"), str(public), row_fingerprint)
        except asyncpg.UniqueViolationError:
            raise ApiError(409, f"Key pair '{name}' already exists.") from None
    assert row is not None
    body = view(row, request, details=False)
    body["user_id"] = user_id
    if private is not None:
        body["private_key"] = private
    status = 201 if microversion_of(request) >= (2, 2) else 200
    return jsonweb.reply({"keypair": body}, status=status)


async def delete(request: web.Request) -> web.Response:
    user_id = _user(request, request.query.get("user_id"))
    name = request.match_info["name"]
    async with request.app[STATE].pool.acquire() as conn:
        done = await conn.fetchval(
            "DELETE FROM simcloud.keypairs WHERE user_id = $1 AND name = $2 RETURNING id", user_id, name)
    if done is None:
        raise ApiError(404, f"Keypair {name} not found for user {user_id}")
    return web.Response(status=204 if microversion_of(request) >= (2, 2) else 202)


def add_routes(router: web.UrlDispatcher, prefix: str) -> None:
    router.add_get(f"{prefix}/os-keypairs", list_keypairs)
    router.add_post(f"{prefix}/os-keypairs", create)
    router.add_get(f"{prefix}/os-keypairs/{{name}}", show)
    router.add_delete(f"{prefix}/os-keypairs/{{name}}", delete)
