"""Nova's ``/limits`` (the project's use against its quotas) and ``/os-availability-zone`` (one zone)."""

from __future__ import annotations

from aiohttp import web

from libs.simcloud import auth, jsonweb
from libs.simcloud.state import STATE

UNLIMITED = -1


async def limits(request: web.Request) -> web.Response:
    caller = auth.auth_of(request)
    state = request.app[STATE]
    async with state.pool.acquire() as conn:
        used = await conn.fetchrow(
            "SELECT count(*) AS servers, coalesce(sum(f.vcpus), 0) AS cores, coalesce(sum(f.ram), 0) AS ram"
            " FROM simcloud.servers s LEFT JOIN simcloud.flavors f ON f.id = s.flavor_id"
            " WHERE s.project_id = $1",
            caller.project_id)
        groups = await conn.fetchval("SELECT count(*) FROM simcloud.server_groups WHERE project_id = $1",
                                     caller.project_id)
    assert used is not None
    quota = int(state.settings.server_quota) or UNLIMITED
    return jsonweb.reply({"limits": {"rate": [], "absolute": {
        "maxTotalInstances": quota, "totalInstancesUsed": used["servers"],
        "maxTotalCores": UNLIMITED, "totalCoresUsed": int(used["cores"]),
        "maxTotalRAMSize": UNLIMITED, "totalRAMUsed": int(used["ram"]),
        "maxServerMeta": 128, "maxImageMeta": 128, "maxPersonality": 5, "maxPersonalitySize": 10240,
        "maxTotalKeypairs": 100, "maxServerGroups": UNLIMITED, "maxServerGroupMembers": UNLIMITED,
        "totalServerGroupsUsed": groups, "maxSecurityGroups": UNLIMITED, "maxSecurityGroupRules": UNLIMITED,
        "maxTotalFloatingIps": UNLIMITED, "totalFloatingIpsUsed": 0, "totalSecurityGroupsUsed": 0}}})


async def availability_zones(request: web.Request) -> web.Response:
    return jsonweb.reply({"availabilityZoneInfo": [
        {"zoneName": "nova", "zoneState": {"available": True}, "hosts": None}]})


def add_routes(router: web.UrlDispatcher, prefix: str) -> None:
    router.add_get(f"{prefix}/limits", limits)
    router.add_get(f"{prefix}/os-availability-zone", availability_zones)
    router.add_get(f"{prefix}/os-availability-zone/detail", availability_zones)
