"""Cinder (block storage v3) of the simulated cloud: volumes, their actions, types, snapshots, quotas.

Volumes go ``creating`` then ``available`` after ``SimSettings.volume_seconds``, computed
from timestamps; Nova's ``os-volume_attachments`` attach them (the shared
``simcloud.volume_attachments`` table), which Cinder shows as ``in-use`` with ``attachments``.
A volume from an image (``imageRef``) is made like any other, bootable, with the image id in
``volume_image_metadata``: the image is not checked (Glance and Cinder share no table).
"""

from libs.simcloud.cinder.api import make_app

__all__ = ["make_app"]
