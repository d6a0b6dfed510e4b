"""Which cloud an Ember project's calls go to: a pure decision over :class:`~libs.config.CloudSettings`."""

from __future__ import annotations

from libs.cloud.caller import CloudTarget
from libs.config import CloudSettings


class NoCloudConfigured(LookupError):
    """No ``clouds.yaml`` entry is Ember's default and the project is mapped to none."""

    def __init__(self, project: str) -> None:
        super().__init__(f"No cloud is configured for project {project!r}: set OS_CLOUD (or EMBER_CLOUD)"
                         " to a clouds.yaml entry, or map the project in EMBER_CLOUD_PROJECTS")
        self.project = project


def target_for(settings: CloudSettings, project: str) -> CloudTarget:
    """The entry (and cloud project) that ``project``'s calls are made in.

    A project named in ``EMBER_CLOUD_PROJECTS`` goes to its entry; every other one to
    the default entry, in the entry's own project.
    """
    for mapped in settings.projects:
        if mapped.project == project:
            return CloudTarget(mapped.cloud, mapped.cloud_project)
    if settings.default is None:
        raise NoCloudConfigured(project)
    return CloudTarget(settings.default)
