"""The demo's GB200 NVL72 variant: trays in racks of 18, jobs of one pod per tray, the report."""

from __future__ import annotations

from fabricfit_dev.demo import report, workloads
from fabricfit_dev.demo.options import from_env


def test_the_gb200_variant_builds_racks_of_18_four_gpu_trays() -> None:
    options = from_env({"FABRICFIT_DEMO_FABRIC": "gb200-nvl72"})
    fabric = options.fake_fabric()
    assert options.gpus_per_node == 4 and options.nodes == 18
    assert (fabric.gpus_per_node, fabric.nics_per_node, fabric.nvlink_domain_nodes) == (4, 4, 18)
    assert fabric.nodes_per_rack == 18 and fabric.node_count == 72


def test_gb200_jobs_run_one_pod_per_tray_and_fit_the_default_cluster() -> None:
    nodes = [f"t{i}" for i in range(72)]
    tenants = workloads.plan_tenants(nodes, 0.3, 7, gpus_per_node=4)
    assert all(t.gpus <= 4 for t in tenants)
    free = workloads.free_whole_nodes(nodes, tenants)
    jobs = workloads.choose_jobs("auto", free, gpus_per_node=4)
    assert jobs == workloads.GB200_STANDARD
    assert all(job.gpus_per_pod == 4 and job.world_size % 4 == 0 for job in jobs)
    assert workloads.nodes_needed(jobs, 4) <= free
    assert workloads.choose_jobs("small", 0, gpus_per_node=4) == workloads.GB200_SMALL
    assert workloads.choose_jobs("small", 0) == workloads.SMALL


def test_the_report_says_what_the_operator_said_about_the_compute_domain() -> None:
    assert report.compute_domain_lines({}) == []
    status = {
        "computeDomain": {"name": "llm", "numNodes": 16, "channelTemplate": "llm-channel",
                          "state": "Unavailable", "groups": "8 tensor groups"},
        "conditions": [{"type": "ComputeDomain", "status": "False",
                        "reason": "ComputeDomainUnavailable", "message": "no CRD"}],
    }  # fmt: skip
    lines = report.compute_domain_lines(status)
    assert "numNodes 16" in lines[0] and "state Unavailable" in lines[0]
    assert lines[1].strip() == "condition ComputeDomain=False ComputeDomainUnavailable: no CRD"
