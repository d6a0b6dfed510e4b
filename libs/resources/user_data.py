"""What a server's ``user_data`` becomes on its way to Nova, per ``user_data_format``.

* ``RAW``: the text as given.

With ``RAW`` or ``SOFTWARE_CONFIG``, a ``user_data`` that is a uuid naming a stored software
config stands for that config's ``config`` text, as Heat's server looks it up at create (a uuid
that names none is the text itself).
* ``HEAT_CFNTOOLS``: a MIME multipart for cloud-init carrying the text as the
  ``cfn-userdata`` part (``text/x-cfninitdata``), as heat-cfntools expects.
* ``SOFTWARE_CONFIG``: a MIME multipart whose parts are the user's text (its parts,
  when it is a multipart already) and the ``cfn-init-data`` part with the metadata
  software deployments read. Ember's software configuration comes with a later issue:
  today that metadata is the server's ``os-collect-config`` section, empty unless set.

Nova takes the result base64-encoded. The boundary is derived from the content, so the
same properties always give the same bytes (a step run twice asks for the same server).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any

from libs.resources.mime import Part, multipart, parts_of
from libs.resources.server_schema import HEAT_CFNTOOLS, RAW, SOFTWARE_CONFIG, USER_DATA, USER_DATA_FORMAT
from libs.resources.software_io import is_uuid_like


def _subtype(content: str) -> str:
    if content.startswith("#!"):
        return "x-shellscript"
    if content.startswith("#cloud-config"):
        return "cloud-config"
    if content.startswith("#cloud-boothook"):
        return "cloud-boothook"
    return "plain"


def _parts_of(content: str) -> list[Part]:
    """A multipart's own parts, else the text itself as the one part."""
    if content.startswith("Content-Type: multipart"):
        parts = parts_of(content)
        if parts:
            return parts
    return [Part(content, "", _subtype(content))]


def config_named(properties: Mapping[str, Any]) -> str | None:
    """The software config the server's ``user_data`` may name (None: it is text)."""
    given = properties.get(USER_DATA)
    if properties.get(USER_DATA_FORMAT) in (RAW, SOFTWARE_CONFIG) and is_uuid_like(given):
        return str(given)
    return None


def content_of(properties: Mapping[str, Any], configs: Mapping[str, Mapping[str, Any]]) -> str:
    """The user data's text: the named config's, where it names one stored (``configs``, by id)."""
    named = config_named(properties)
    found = configs.get(named) if named is not None else None
    if found is None:
        return str(properties.get(USER_DATA) or "")
    text = found.get("config")
    if text is None:
        return ""
    return text if isinstance(text, str) else json.dumps(text)


def build_user_data(user_data_format: str, content: str, metadata: Mapping[str, Any] | None = None
                    ) -> str:
    """The text Nova's ``user_data`` carries (before base64)."""
    if user_data_format == RAW:
        return content
    if user_data_format == HEAT_CFNTOOLS:
        return multipart([Part(content, "cfn-userdata", "x-cfninitdata")])
    parts = _parts_of(content) if content else []
    parts.append(Part(json.dumps(dict(metadata or {}), sort_keys=True), "cfn-init-data", "x-cfninitdata"))
    return multipart(parts)


def encoded(text: str) -> str | None:
    """Base64 text for Nova, or None for no user data."""
    return base64.b64encode(text.encode()).decode() if text else None
