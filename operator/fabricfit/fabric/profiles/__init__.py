"""Fabric profiles: what a fabric is to the cost model, and which one prices a job (pure).

A profile is frozen data (:mod:`~fabricfit.fabric.profiles.profile`): per-GPU NVLink
bandwidth, NVLink SHARP, NICs and their line rate, per-tier oversubscription and latencies, and
the platform's NCCL set-up (:mod:`~fabricfit.fabric.profiles.ncclsetup`). Profile documents are
read and validated by :mod:`~fabricfit.fabric.profiles.reading`; the presets are the YAML files
in ``presets/`` (every number with its source). :mod:`~fabricfit.fabric.profiles.catalog` is the
set of profiles a process knows (presets plus custom files) and
:mod:`~fabricfit.fabric.profiles.choice` picks the one that prices a job.

Adding a preset is one file: ``presets/<name>.yaml``.
"""

from fabricfit.fabric.profiles.reading import (
    DEFAULT_PROFILE,
    PRESETS,
    FabricProfile,
    ProfileError,
    TorusSpec,
    get_profile,
    load_profile,
)

__all__ = [
    "DEFAULT_PROFILE",
    "PRESETS",
    "FabricProfile",
    "ProfileError",
    "TorusSpec",
    "get_profile",
    "load_profile",
]
