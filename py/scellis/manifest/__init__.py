"""Pinned runs, above every stage (as the session is): a finished or stopped run's manifest pins its
program, data versions, checkpoints, engine, settings, plan, metrics and decision log (`record`); a share
link carries a program and its settings in a URL fragment (`link`); `replay` runs a program for pinning and
re-runs a manifest to verify it. Manifests and links are untrusted data: read field by field, never run.
"""

from scellis.manifest.fields import ManifestError
from scellis.manifest.link import LinkError, RanOn, Shared, read_share_link, share_link
from scellis.manifest.pins import (
    DataVersion,
    Engine,
    Settings,
    check_data,
    data_versions,
    engine_from_build,
    installed_engine,
)
from scellis.manifest.record import Manifest, build_manifest, read_manifest, to_json

__all__ = [
    "DataVersion",
    "Engine",
    "LinkError",
    "Manifest",
    "ManifestError",
    "RanOn",
    "Settings",
    "Shared",
    "build_manifest",
    "check_data",
    "data_versions",
    "engine_from_build",
    "installed_engine",
    "read_manifest",
    "read_share_link",
    "share_link",
    "to_json",
]
