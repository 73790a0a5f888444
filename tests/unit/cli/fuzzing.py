"""Hostile input for the CLI fuzzers: hypothesis strategies of node dumps, TrainingTopologies
and arguments, and the in-process runner of ``fabricfit.cli.main``."""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from fabricfit.cli.main import main
from fabricfit.fabric.profiles import PRESETS
from fabricfit.fabric.schemes import NAMES as LABEL_SCHEMES

FUZZ = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=True,
)

# --- strategies ------------------------------------------------------------------------------


def mostly(valid: st.SearchStrategy[Any], hostile: st.SearchStrategy[Any]) -> Any:
    """Mostly ``valid``, sometimes ``hostile``: most examples get past the first check and reach
    the planner or the cost model, where the deeper bugs live. (Hostile on a middle value:
    hypothesis favours the bounds of an integer range.)"""
    return st.integers(0, 9).flatmap(lambda i: hostile if i == 6 else valid)


weird_text = st.one_of(
    st.text(max_size=24),
    st.sampled_from(["", " ", "\n", "-1", "0", "1e400", "NaN", "inf", "😀", "ünïcödé", "\x00"]),
)
ints = st.one_of(
    st.integers(min_value=-3, max_value=70),
    st.sampled_from([0, -1, 2**31, 2**63, 10**30, -(10**30)]),
)
scalar: st.SearchStrategy[Any] = st.one_of(
    ints, weird_text, st.booleans(), st.none(), st.floats(allow_nan=True)
)
junk: st.SearchStrategy[Any] = st.recursive(
    scalar,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(weird_text, inner, max_size=3)
    ),
    max_leaves=6,
)
quantity = st.one_of(
    st.sampled_from(["8", "0", "-8", "4", "1e3", "8Ki", "999999999999999999999", "abc", "", "1.5"]),
    ints.map(str),
    junk,
)
label_keys = st.sampled_from(
    [
        "topology.fabricfit.dev/nvlink-domain",
        "topology.fabricfit.dev/rail-group",
        "topology.fabricfit.dev/rack",
        "topology.fabricfit.dev/spine",
        "topology.fabricfit.dev/rails",
        "topology.fabricfit.dev/fabric",
        "nvidia.com/gpu.clique",
        "fabric.topograph.run/tier-0",
        "fabric.topograph.run/tier-1",
        "accelerator.topograph.run/domain",
        "network.topology.nvidia.com/spine",
        "cloud.google.com/gce-topology-block",
        "cloud.google.com/gce-topology-subblock",
        "topology.k8s.aws/network-node-layer-1",
        "topology.k8s.aws/network-node-layer-3",
        "oci.oraclecloud.com/rdma.local_block_id",
        "ib.coreweave.cloud/leafgroup",
        "nvidia.com/gpu.count",
    ]
)
GOOD_VALUES = ["rg-0", "rg-1", "nvl-0", "rack-1", "spine-0", "8", "dgx-h100"]
label_values = st.one_of(
    st.sampled_from(["rg-0", "rg-1", "nvl-0", "8", "0", "-4", "1e9", "dgx-h100", "no-such"]),
    weird_text,
    junk,
)


@st.composite
def node(draw: st.DrawFn, index: int) -> Any:
    if draw(st.integers(0, 30)) == 17:
        return draw(junk)  # not even an object
    gpus = mostly(st.sampled_from(["8", "4"]), quantity)
    allocatable = draw(st.one_of(st.fixed_dictionaries({"nvidia.com/gpu": gpus}), junk))
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": draw(mostly(st.just(f"n{index}"), junk)),
            "labels": draw(
                mostly(
                    st.dictionaries(label_keys, mostly(st.sampled_from(GOOD_VALUES), label_values)),
                    junk,
                )
            ),
        },
        "spec": draw(
            mostly(
                st.just({}),
                st.fixed_dictionaries(
                    {"unschedulable": st.one_of(st.booleans(), junk), "taints": junk}
                ),
            )
        ),
        "status": {
            "allocatable": allocatable,
            "capacity": draw(mostly(st.just(allocatable), junk)),
            "conditions": draw(
                mostly(
                    st.just([{"type": "Ready", "status": "True"}]),
                    st.one_of(
                        st.lists(st.fixed_dictionaries({"type": weird_text, "status": junk})),
                        junk,
                    ),
                )
            ),
        },
    }
    return body


@st.composite
def node_dump(draw: st.DrawFn) -> Any:
    count = draw(st.integers(0, 8))
    items = [draw(node(i)) for i in range(count)]
    shape = draw(mostly(st.just("list"), st.sampled_from(["array", "single", "junk"])))
    if shape == "list":
        return {"apiVersion": "v1", "kind": "List", "items": items}
    if shape == "array":
        return items
    if shape == "single":
        return items[0] if items else {}
    return draw(junk)


small = mostly(st.sampled_from([1, 1, 2, 4, 8]), ints)
parallelism = mostly(
    st.fixed_dictionaries(
        {"tensor": small},
        optional={"pipeline": small, "data": small, "expert": small, "context": small},
    ),
    junk,
)
spec_fields: dict[str, st.SearchStrategy[Any]] = {
    "workloadRef": mostly(
        st.just({"apiVersion": "batch/v1", "kind": "Job", "name": "j"}),
        st.one_of(
            st.fixed_dictionaries(
                {"apiVersion": weird_text, "kind": weird_text, "name": weird_text}
            ),
            junk,
        ),
    ),
    "gpusPerPod": mostly(st.sampled_from([8, 4]), ints),
    "parallelism": parallelism,
    "rankOrder": mostly(
        st.sampled_from(["tp-cp-ep-dp-pp", "pp-dp-ep-cp-tp"]),
        st.one_of(st.sampled_from(["tp-tp", "pp-dp-tp"]), weird_text),
    ),
    "model": mostly(
        st.fixed_dictionaries(
            {},
            optional={
                "parameters": mostly(st.just(7_000_000_000), ints),
                "hiddenSize": mostly(st.just(4096), ints),
                "layers": small,
                "experts": small,
                "topK": small,
                "zeroStage": mostly(st.integers(0, 3), ints),
                "bytesPerElement": mostly(st.just(2), ints),
                "microBatches": small,
            },
        ),
        junk,
    ),
    "fabric": mostly(st.sampled_from(tuple(PRESETS)), st.one_of(st.just("dgx-h999"), junk)),
    "labelScheme": mostly(st.sampled_from([*LABEL_SCHEMES, "klingon"]), junk),
    "placement": mostly(
        st.fixed_dictionaries(
            {},
            optional={
                "mode": st.sampled_from(["pinned", "advisory", "kueue-tas", "yolo"]),
                "tensor": st.sampled_from(["Required", "Preferred", "Maybe"]),
                "data": st.sampled_from(["Required", "Preferred", 3]),
            },
        ),
        junk,
    ),
}
spec_dict = st.fixed_dictionaries(
    {k: v for k, v in spec_fields.items() if k in ("gpusPerPod", "parallelism")},
    optional={k: v for k, v in spec_fields.items() if k not in ("gpusPerPod", "parallelism")},
)


@st.composite
def topology_doc(draw: st.DrawFn) -> Any:
    spec = draw(spec_dict)
    shape = draw(mostly(st.sampled_from(["object", "bare"]), st.sampled_from(["two", "junk"])))
    if shape == "object":
        return [{"apiVersion": "fabricfit.dev/v1alpha1", "kind": "TrainingTopology", "spec": spec}]
    if shape == "bare":
        return [spec]
    if shape == "two":
        tt = {"kind": "TrainingTopology", "spec": spec}
        return [tt, tt]
    return [draw(junk)]


def serialise(doc: Any, as_json: bool) -> str:
    if as_json:
        return json.dumps(doc, default=str)
    return yaml.safe_dump_all(doc if isinstance(doc, list) else [doc], allow_unicode=True)


# --- running ---------------------------------------------------------------------------------


@contextlib.contextmanager
def files() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="fuzz-cli-") as tmp:
        yield Path(tmp)


def run_inprocess(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 2
    return code, out.getvalue(), err.getvalue()
