"""Version discovery documents: what keystoneauth reads at a service's root and versioned endpoint.

Each service answers its root (``/compute/``) with ``{"versions": [...]}`` and its
versioned endpoint (``/compute/v2.1``) with ``{"version": {...}}``; a service
with microversions gives ``version`` (its maximum) and ``min_version``.
"""

from __future__ import annotations

import dataclasses

from aiohttp import web

from libs.simcloud import jsonweb

UPDATED = "2025-09-01T00:00:00Z"


@dataclasses.dataclass(frozen=True)
class ApiVersion:
    id: str  # "v2.1"
    path: str  # the versioned endpoint under the service's prefix: "/compute/v2.1"
    max_microversion: str = ""
    min_microversion: str = ""


def document(base: str, version: ApiVersion) -> dict[str, object]:
    return {"id": version.id, "status": "CURRENT", "version": version.max_microversion,
            "min_version": version.min_microversion, "updated": UPDATED,
            "links": [{"rel": "self", "href": f"{base}{version.path}/"}],
            "media-types": [{"base": "application/json",
                             "type": f"application/vnd.openstack.{version.id}+json"}]}


def add_routes(app: web.Application, prefix: str, version: ApiVersion) -> None:
    """GET on the service's root and on its versioned endpoint (with and without a trailing slash).

    Routes are added to a sub-app mounted at ``prefix``: ``""`` is its root.
    """
    versioned = version.path.removeprefix(prefix)

    async def root(request: web.Request) -> web.Response:
        return jsonweb.reply({"versions": [document(jsonweb.base_url(request), version)]})

    async def one(request: web.Request) -> web.Response:
        return jsonweb.reply({"version": document(jsonweb.base_url(request), version)})

    app.router.add_get("/", root)
    app.router.add_get(versioned, one)
    app.router.add_get(versioned + "/", one)
