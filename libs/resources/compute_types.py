"""The Nova, Cinder and Glance resource types, for :func:`libs.resources.registry.default_registry`."""

from __future__ import annotations

from typing import Final

from libs.resources.base import ResourceType
from libs.resources.flavor import Flavor
from libs.resources.keypair import KeyPair
from libs.resources.server import Server
from libs.resources.server_group import ServerGroup
from libs.resources.volume import Volume
from libs.resources.volume_attachment import VolumeAttachment
from libs.resources.web_image import WebImage

COMPUTE_TYPES: Final[tuple[type[ResourceType], ...]] = (
    Server, KeyPair, ServerGroup, Flavor, Volume, VolumeAttachment, WebImage)
