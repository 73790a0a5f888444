"""The operator image on a real control plane, run as the chart's Deployment runs it.

``hack/image.sh`` (``make image``) builds the image from the Dockerfile and writes an OCI archive
(a no-op when its inputs are unchanged). The test unpacks it with umoci into an OCI bundle and
runs it with runc, its runtime spec taken from the chart's rendered Deployment: the container's
args, user and group, read-only root filesystem, no capabilities, no privilege escalation, the
/tmp emptyDir (a tmpfs of its size limit) and the memory limit. What a pod gets from the node
differs: the host's network (the API server, /healthz and /metrics are on loopback), a
read-only kubeconfig instead of the ServiceAccount token, no rlimits (Kubernetes sets none) and
no seccomp profile (RuntimeDefault is the node runtime's own). The operator then places a job,
and the assertions read what the cluster did.

Needs root, runc and umoci (hack/image.sh installs them with apt-get); skips without them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tarfile
import time
import tomllib
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from fabricfit_dev.chart import render
from fabricfit_dev.cluster.processes import free_port
from fabricfit_dev.e2e.objects import (
    TT,
    indexed_job,
    make_pool,
    planned,
    topology,
    wait_bound,
    wait_condition,
)
from fabricfit_dev.operator import OperatorProcess
from fabricfit_dev.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
VERSION = PYPROJECT["project"]["version"]
ARCHIVE = ROOT / "dist" / f"fabricfit-{VERSION}.oci.tar"
SITE_PACKAGES = "opt/fabricfit/lib/python3.11/site-packages"
KUBECONFIG_IN_CONTAINER = "/etc/fabricfit/kubeconfig"
CAPABILITY_SETS = ("bounding", "effective", "inheritable", "permitted", "ambient")
BINARY_SUFFIXES = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30}


@pytest.fixture(scope="module")
def archive() -> Path:
    """The image's OCI archive, built (or found up to date) by hack/image.sh."""
    if os.geteuid() != 0:
        pytest.skip("runs the image with runc, which needs root here")
    tools = ("buildah", "umoci", "runc", "mmdebstrap")
    if not all(shutil.which(t) for t in tools) and not shutil.which("apt-get"):
        pytest.skip(f"needs {', '.join(tools)} (hack/image.sh installs them with apt-get)")
    built = subprocess.run(
        [str(ROOT / "hack" / "image.sh")], capture_output=True, text=True, check=False
    )
    assert built.returncode == 0, built.stderr
    return ARCHIVE


@pytest.fixture(scope="module")
def layout(archive: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The archive as an OCI image layout directory."""
    directory = tmp_path_factory.mktemp("layout")
    with tarfile.open(archive) as tar:
        tar.extractall(directory, filter="data")
    yield directory
    shutil.rmtree(directory)


@pytest.fixture(scope="module")
def bundle(layout: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The image unpacked by umoci: rootfs/ and the runtime spec config.json it derives."""
    directory = tmp_path_factory.mktemp("bundle") / "bundle"
    (manifest,) = json.loads((layout / "index.json").read_text())["manifests"]
    ref = manifest["annotations"]["org.opencontainers.image.ref.name"]
    subprocess.run(
        ["umoci", "unpack", "--image", f"{layout}:{ref}", str(directory)],
        check=True, capture_output=True,
    )  # fmt: skip
    yield directory
    shutil.rmtree(directory)


def blob(layout: Path, digest: str) -> Any:
    return json.loads((layout / "blobs" / "sha256" / digest.removeprefix("sha256:")).read_text())


def image_config(layout: Path) -> dict[str, Any]:
    """The image's configuration (OCI image spec: config.config) from the layout."""
    (entry,) = json.loads((layout / "index.json").read_text())["manifests"]
    manifest = blob(layout, entry["digest"])
    return dict(blob(layout, manifest["config"]["digest"])["config"])


def quantity_bytes(text: str) -> int:
    suffix = text[-2:]
    return int(text[:-2]) * BINARY_SUFFIXES[suffix] if suffix in BINARY_SUFFIXES else int(text)


def loopback(args: list[str]) -> list[str]:
    """The chart's flags, its liveness endpoint on loopback: the container shares the host's
    network, where 0.0.0.0 would listen on every interface of the machine."""
    return [a.replace("http://0.0.0.0:", "http://127.0.0.1:") for a in args]


def tmpfs_mounts(pod: dict[str, Any], container: dict[str, Any]) -> list[dict[str, Any]]:
    """The container's volume mounts; an emptyDir is a tmpfs of its size limit."""
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = []
    for mount in container["volumeMounts"]:
        volume = volumes[mount["name"]]
        assert set(volume) == {"name", "emptyDir"}, f"the test runs emptyDir volumes only: {volume}"
        size = quantity_bytes(volume["emptyDir"]["sizeLimit"])
        options = ["nosuid", "nodev", "mode=1777", f"size={size}"]
        mounts.append({"destination": mount["mountPath"], "type": "tmpfs", "source": "tmpfs",
                       "options": options})  # fmt: skip
    return mounts


def runtime_spec(spec: dict[str, Any], pod: dict[str, Any], kubeconfig: Path) -> dict[str, Any]:
    """umoci's runtime spec for the image, changed as the Deployment's pod spec asks."""
    (container,) = pod["containers"]
    security = {**pod["securityContext"], **container["securityContext"]}
    assert security["runAsNonRoot"] and security["runAsUser"] != 0
    assert security["capabilities"]["drop"] == ["ALL"]
    process = spec["process"]
    process["terminal"] = False
    process["user"] = {"uid": security["runAsUser"], "gid": security["runAsGroup"]}
    process["args"] = [*process["args"], *loopback(container["args"])]
    process["env"] += [f"{e['name']}={e['value']}" for e in container.get("env", [])]
    process["env"].append(f"KUBECONFIG={KUBECONFIG_IN_CONTAINER}")
    kept = [f"CAP_{c}" for c in security["capabilities"].get("add", [])]
    process["capabilities"] = dict.fromkeys(CAPABILITY_SETS, kept)
    process["noNewPrivileges"] = not security["allowPrivilegeEscalation"]
    process.pop("rlimits", None)
    spec["root"]["readonly"] = security["readOnlyRootFilesystem"]
    spec["mounts"] += [
        *tmpfs_mounts(pod, container),
        {"destination": KUBECONFIG_IN_CONTAINER, "type": "bind", "source": str(kubeconfig),
         "options": ["rbind", "ro"]},
    ]  # fmt: skip
    linux = spec["linux"]
    linux["namespaces"] = [n for n in linux["namespaces"] if n["type"] != "network"]
    memory = quantity_bytes(container["resources"]["limits"]["memory"])
    linux.setdefault("resources", {})["memory"] = {"limit": memory}
    return spec


class Container:
    """``runc run`` of a bundle in the foreground, as the kubelet's runtime would."""

    def __init__(self, bundle: Path, state: Path, log: IO[bytes]) -> None:
        self.runc = ["runc", "--root", str(state)]
        self.id = f"fabricfit-e2e-{uuid.uuid4().hex[:8]}"
        self.proc = subprocess.Popen(
            [*self.runc, "run", "--bundle", str(bundle), self.id], stdout=log, stderr=log
        )

    def pid(self) -> int:
        state = subprocess.run([*self.runc, "state", self.id], capture_output=True, check=True)
        return int(json.loads(state.stdout)["pid"])

    def stop(self) -> int:
        """SIGTERM, as a pod's deletion sends; the exit status."""
        subprocess.run([*self.runc, "kill", self.id, "TERM"], capture_output=True, check=False)
        try:
            return self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            subprocess.run([*self.runc, "kill", self.id, "KILL"], capture_output=True, check=False)
            self.proc.wait(timeout=10)
            raise
        finally:
            subprocess.run([*self.runc, "delete", "--force", self.id], capture_output=True,
                           check=False)  # fmt: skip


def answers(url: str) -> bytes | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bytes(response.read()) if response.status == 200 else None
    except OSError:
        return None


def status_fields(pid: int) -> dict[str, str]:
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return {k: v.strip() for k, _, v in (line.partition(":") for line in lines)}


def tree_bytes(directory: Path) -> int:
    return sum(p.lstat().st_size for p in directory.rglob("*") if not p.is_dir())


def chart_pod(liveness: int, metrics: int) -> dict[str, Any]:
    """The pod spec of the chart's Deployment (default values), on free ports."""
    objects = render(None, f"liveness.port={liveness}", f"metrics.port={metrics}")
    (deployment,) = [o for o in objects if o["kind"] == "Deployment"]
    return dict(deployment["spec"]["template"]["spec"])


def prepare_bundle(bundle: Path, pod: dict[str, Any], kubectl: list[str], tmp_path: Path) -> None:
    """Point the bundle's runtime spec at the pod, with the kubeconfig flattened (certificates
    inline: the container sees no other file) and readable only by the container's user."""
    spec = json.loads((bundle / "config.json").read_text())
    readable = tmp_path / "kubeconfig"
    spec = runtime_spec(spec, pod, readable)
    flat = subprocess.run([*kubectl, "config", "view", "--flatten", "--minify"],
                          capture_output=True, check=True).stdout  # fmt: skip
    readable.write_bytes(flat)
    os.chown(readable, spec["process"]["user"]["uid"], spec["process"]["user"]["gid"])
    readable.chmod(0o400)
    (bundle / "config.json").write_text(json.dumps(spec))


def assert_confined(pid: int) -> None:
    """The process as the kernel sees it: user and group 10001, no capabilities, no new
    privileges, a read-only root."""
    status = status_fields(pid)
    assert status["Uid"].split() == ["10001"] * 4 and status["Gid"].split() == ["10001"] * 4
    assert status["CapEff"] == status["CapPrm"] == status["CapBnd"] == "0" * 16
    assert status["NoNewPrivs"] == "1"
    mounts = [line.split() for line in Path(f"/proc/{pid}/mountinfo").read_text().splitlines()]
    (root,) = [m for m in mounts if m[4] == "/"]
    assert "ro" in root[5].split(","), root


def place_a_job(core: Any, custom: Any, batch: Any, namespace: str) -> None:
    """A suspended Indexed Job and its TrainingTopology; every pod ends bound to the node the
    plan in status names, and Placed=True."""
    make_pool(core, "img", rail_groups_per_spine=1, nodes_per_rail_group=4)
    batch.create_namespaced_job(namespace, indexed_job("img", 4, "img"))
    spec = topology("img", "img", {"tensor": 8, "data": 4})
    custom.create_namespaced_custom_object(*TT[:2], namespace, TT[2], spec)
    tt = wait_condition(custom, namespace, "img", "Placed", "True", timeout=120)
    pods = wait_bound(core, namespace, "img", 4)
    assert {i: p.spec.node_name for i, p in pods.items()} == dict(enumerate(planned(tt)))


def test_the_image_places_a_job_as_the_chart_runs_it(
    archive: Path,
    bundle: Path,
    operator: OperatorProcess,
    kubectl: list[str],
    core: Any,
    custom: Any,
    batch: Any,
    namespace: str,
    tmp_path: Path,
) -> None:
    liveness, metrics = free_port(), free_port()
    prepare_bundle(bundle, chart_pod(liveness, metrics), kubectl, tmp_path)
    log_path = tmp_path / "container.log"
    operator.stop()  # only the image's operator may act during this test
    try:
        with log_path.open("wb") as log:
            started = time.monotonic()
            container = Container(bundle, tmp_path / "runc", log)
            try:
                wait_for(lambda: answers(f"http://127.0.0.1:{liveness}/healthz"),
                         timeout_seconds=60, interval_seconds=0.05,
                         what="the image's operator to answer /healthz")  # fmt: skip
                ready_seconds = time.monotonic() - started
                assert_confined(container.pid())
                scrape = answers(f"http://127.0.0.1:{metrics}/metrics")
                assert scrape is not None and b"fabricfit_" in scrape
                place_a_job(core, custom, batch, namespace)
                assert container.proc.poll() is None
            finally:
                exit_status = container.stop()
    finally:
        operator.start()
    logs = log_path.read_text(errors="replace")
    assert exit_status == 0, logs
    assert "Traceback" not in logs and "Read-only file system" not in logs, logs
    print(
        f"\n[image] {archive.name}: {archive.stat().st_size / 1e6:.1f} MB compressed, "
        f"{tree_bytes(bundle / 'rootfs') / 1e6:.0f} MB unpacked; the operator answered "
        f"/healthz {ready_seconds:.2f} s after runc run"
    )


def test_the_image_holds_the_package_data_byte_code_user_and_labels(
    layout: Path, bundle: Path
) -> None:
    config = image_config(layout)
    assert config["User"] == "10001:10001"
    assert config["Entrypoint"] == ["fabricfit", "run"] and not config.get("Cmd")
    assert "PYTHONDONTWRITEBYTECODE=1" in config["Env"]
    labels = config["Labels"]
    assert labels["org.opencontainers.image.title"] == PYPROJECT["project"]["name"]
    assert labels["org.opencontainers.image.version"] == VERSION
    assert labels["org.opencontainers.image.licenses"] == PYPROJECT["project"]["license"]["text"]
    assert labels["org.opencontainers.image.base.name"]

    installed = bundle / "rootfs" / SITE_PACKAGES / "fabricfit"
    source = ROOT / "operator" / "fabricfit"
    for pattern in PYPROJECT["tool"]["setuptools"]["package-data"]["fabricfit"]:
        wanted = {p.relative_to(source) for p in source.glob(pattern)}
        assert wanted, f"package-data {pattern} matches nothing in {source}"
        assert {p.relative_to(installed) for p in installed.glob(pattern)} == wanted, pattern

    # A read-only root cannot cache byte code: every module is compiled in the image, and
    # checked by hash never (PEP 552 flags 0b01), so a changed mtime cannot make it stale.
    modules = sorted(installed.rglob("*.py"))
    assert len(modules) > 100
    for module in modules:
        (compiled,) = (module.parent / "__pycache__").glob(f"{module.stem}.cpython-311.pyc")
        assert int.from_bytes(compiled.read_bytes()[4:8], "little") == 1, compiled
