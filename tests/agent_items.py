"""Derived configs as the API serves them to ``ember agent`` (Heat's shape plus ``ember_hash``), for tests."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def item(name: str, config: Any = "#!/bin/sh\necho hi\n", *, group: str = "script",
         inputs: dict[str, Any] | None = None, outputs: tuple[str, ...] = (),
         derived: dict[str, Any] | None = None, key: str | None = None) -> dict[str, Any]:
    """One item: declared ``inputs`` (String), Heat's derived ones (``derived``; NO_SIGNAL by default)."""
    every = {"deploy_server_id": "srv-1", "deploy_action": "CREATE", "deploy_stack_id": "web/4f1e",
             "deploy_resource_name": name, "deploy_signal_transport": "NO_SIGNAL", **(derived or {})}
    body: dict[str, Any] = {
        "id": hashlib.sha256(f"id-{name}-{key}".encode()).hexdigest()[:32], "name": name, "group": group,
        "creation_time": "2026-11-29T10:00:00Z", "config": config, "options": {},
        "inputs": [*({"name": k, "type": "String", "value": v, "description": None, "default": None}
                     for k, v in (inputs or {}).items()),
                   *({"name": k, "type": "String", "value": v, "description": "derived", "default": None}
                     for k, v in every.items())],
        "outputs": [{"name": o, "type": "String", "error_output": False, "description": None}
                    for o in outputs],
    }
    body["ember_hash"] = key or hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
    return body


def signalled_to(url: str, verb: str = "POST") -> dict[str, Any]:
    return {"deploy_signal_transport": "CFN_SIGNAL", "deploy_signal_id": url, "deploy_signal_verb": verb}
