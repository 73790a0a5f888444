"""Kueue objects and the decoding of what Kueue decided (fabricfit_dev.cluster.kueueobjects)."""

from __future__ import annotations

from fabricfit_dev.cluster import kueueobjects


def test_a_compressed_topology_assignment_decodes_to_pods_per_node() -> None:
    # The v1beta2 form of hostnames kind-worker (7 pods) and kind-worker2 (3 pods).
    assignment = {
        "levels": ["kubernetes.io/hostname"],
        "slices": [{
            "domainCount": 2,
            "valuesPerLevel": [{"individual": {"prefix": "kind-worker", "roots": ["", "2"]}}],
            "podCounts": {"individual": [7, 3]},
        }, {
            "domainCount": 1,
            "valuesPerLevel": [{"universal": "other"}],
            "podCounts": {"universal": 2},
        }],
    }  # fmt: skip
    assert kueueobjects.assignment_counts(assignment) == {
        ("kind-worker",): 7,
        ("kind-worker2",): 3,
        ("other",): 2,
    }


def test_the_workload_of_a_job_is_found_by_owner_and_admission_read_from_its_conditions() -> None:
    mine = {
        "metadata": {"name": "job-a", "ownerReferences": [{"uid": "u1"}]},
        "status": {"conditions": [{"type": "Admitted", "status": "True"}]},
    }
    other = {"metadata": {"name": "job-b", "ownerReferences": [{"uid": "u2"}]}}
    assert kueueobjects.owned_workload([other, mine], "u1") == mine
    assert kueueobjects.owned_workload([other], "u1") is None
    assert kueueobjects.is_admitted(mine) and not kueueobjects.is_admitted(other)


def test_a_tas_flavor_names_its_topology_and_the_queue_its_checks() -> None:
    flavor = kueueobjects.resource_flavor("f", {"pool": "a"}, "topo")
    assert flavor["spec"] == {"nodeLabels": {"pool": "a"}, "topologyName": "topo"}
    queue = kueueobjects.cluster_queue("q", "f", 64, ["fabricfit"])
    # v1beta2 has no spec.admissionChecks (the API server would prune it): the strategy's list
    assert queue["spec"]["admissionChecksStrategy"] == {"admissionChecks": [{"name": "fabricfit"}]}
    quota = queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]
    assert quota == {"name": "nvidia.com/gpu", "nominalQuota": 64}
    levels = kueueobjects.topology("t", ["a", kueueobjects.HOSTNAME])["spec"]["levels"]
    assert levels == [{"nodeLabel": "a"}, {"nodeLabel": "kubernetes.io/hostname"}]
