"""One fabric choice for the CLI and the operator: explicit > spec > label > instance type >
default; unknown labels name the node; mixed clusters are priced as their dominant fabric."""

from __future__ import annotations

import pytest
import yaml

from fabricfit.api.constants import LABEL_FABRIC
from fabricfit.fabric.profiles import PRESETS, get_profile
from fabricfit.fabric.profiles.catalog import Catalog, build_catalog, dump_profile
from fabricfit.fabric.profiles.choice import INSTANCE_PRESETS, FabricChoiceError, choose_profile
from fabricfit.fabric.topology import FabricPlace, NodeInfo

INSTANCE = "node.kubernetes.io/instance-type"
TPU = {LABEL_FABRIC: "tpu-v4"}


def labelled(name: str, fabric: str, gpus: int = 8) -> NodeInfo:
    labels = {LABEL_FABRIC: fabric}
    return NodeInfo(name, gpus, gpus, gpus, FabricPlace(), fabric=fabric, labels=labels)


def typed(name: str, machine: str, key: str = INSTANCE) -> NodeInfo:
    return NodeInfo(name, 8, 8, 8, FabricPlace(), labels={key: machine})


def choose(nodes: list[NodeInfo], spec: str | None = None, **kw: object) -> tuple[str, str]:
    catalog = kw.pop("catalog", Catalog())
    assert isinstance(catalog, Catalog)
    choice = choose_profile(
        nodes,
        spec_fabric=spec,
        default="dgx-h100",
        catalog=catalog,
        **kw,  # type: ignore[arg-type]
    )
    return choice.profile.name, choice.reason


def test_precedence() -> None:
    nodes = [labelled("a", "dgx-a100"), typed("b", "p5.48xlarge")]
    assert choose(nodes, "dgx-b200", requested="tpu-v4")[0] == "tpu-v4"
    assert choose(nodes, "dgx-b200") == ("dgx-b200", "spec.fabric names it")
    assert choose([labelled("a", "dgx-a100")], "auto")[0] == "dgx-a100"
    assert choose([typed("b", "p5.48xlarge")])[0] == "aws-p5"
    name, reason = choose([NodeInfo("c", 8, 8, 8, FabricPlace())])
    assert name == "dgx-h100" and "default" in reason


@pytest.mark.parametrize(("machine", "preset"), sorted(INSTANCE_PRESETS.items()))
def test_every_mapped_instance_type_is_a_preset(machine: str, preset: str) -> None:
    assert preset in PRESETS
    name, reason = choose([typed("n", machine)])
    assert name == preset and machine in reason


def test_the_beta_instance_type_label_counts_too() -> None:
    beta = "beta.kubernetes.io/instance-type"
    assert choose([typed("n", "a3-megagpu-8g", key=beta)])[0] == "gcp-a3-mega"


def test_an_unknown_label_names_the_node_and_the_label() -> None:
    name, reason = choose([labelled("good", "dgx-b200"), labelled("gpu-7", "dgx-h999")])
    assert name == "dgx-b200"
    assert f"ignored: {LABEL_FABRIC}='dgx-h999' on node gpu-7" in reason
    with pytest.raises(FabricChoiceError) as err:
        choose([labelled("gpu-7", "dgx-h999")])
    message = str(err.value)
    assert "gpu-7" in message and f"{LABEL_FABRIC}='dgx-h999'" in message


def test_unlabelled_nodes_are_of_the_default() -> None:
    unlabelled = NodeInfo("u", 8, 8, 8, FabricPlace(), fabric="dgx-h100")
    name, reason = choose([unlabelled, unlabelled, labelled("a", "dgx-a100")])
    assert name == "dgx-h100" and "default" in reason


def test_an_unknown_spec_fabric_says_spec_fabric() -> None:
    with pytest.raises(FabricChoiceError, match=r"^spec.fabric: unknown fabric profile"):
        choose([], "nope")


def test_mixed_fabrics_take_the_most_gpus_and_say_so() -> None:
    nodes = [labelled("a", "dgx-a100"), labelled("b", "dgx-a100"), typed("c", "p5.48xlarge")]
    name, reason = choose(nodes)
    assert name == "dgx-a100"
    assert "2 fabrics" in reason and "aws-p5 on 1" in reason


def test_unavailable_and_gpu_less_nodes_do_not_vote() -> None:
    nodes = [
        NodeInfo("down", 8, 8, 8, FabricPlace(), False, fabric="tpu-v4", labels=TPU),
        labelled("cpu", "dgx-a100", gpus=0),
        labelled("up", "dgx-b200"),
    ]
    assert choose(nodes)[0] == "dgx-b200"


def test_labels_may_name_custom_profiles() -> None:
    doc = yaml.safe_load(dump_profile(get_profile("dgx-h100")))
    catalog = build_catalog([("site.yaml", yaml.safe_dump({**doc, "name": "site-h100"}))])
    name, reason = choose([labelled("a", "site-h100")], catalog=catalog)
    assert name == "site-h100" and LABEL_FABRIC in reason


def test_a_profile_object_is_used_as_given() -> None:
    profile = get_profile("dgx-a100")
    name, reason = choose([], "dgx-b200", requested=profile, requested_by="--fabric-file")
    assert name == "dgx-a100" and reason.startswith("--fabric-file")
