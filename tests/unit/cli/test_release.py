"""`fabricfit release`: the patches it sends, what it reports, and that it repeats until a pass
finds nothing (an operator still stopping may re-add a finalizer)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from fabricfit.api.constants import FINALIZER, SCHEDULING_GATE
from fabricfit.cli import release
from fabricfit.cli.main import main
from fabricfit.kube.rest import ApiError
from fabricfit_dev.jsonpatch import apply_patch


def tt(name: str, *finalizers: str) -> dict[str, Any]:
    return {"metadata": {"namespace": "team", "name": name, "finalizers": list(finalizers)}}


def pod(name: str, *gates: str) -> dict[str, Any]:
    return {
        "metadata": {"namespace": "team", "name": name},
        "spec": {"schedulingGates": [{"name": g} for g in gates]},
    }


def test_finalizer_patch_removes_only_ours() -> None:
    obj = tt("a", "other.io/keep", FINALIZER)
    patch = release.finalizer_patch(obj)
    assert patch[0] == {"op": "test", "path": "/metadata/finalizers/1", "value": FINALIZER}
    assert apply_patch(obj, patch)["metadata"]["finalizers"] == ["other.io/keep"]
    assert release.finalizer_patch(tt("b", "other.io/keep")) == []


class FakeRest:
    """Lists and patches in memory; ``readd`` finalizers come back once (a stopping operator)."""

    def __init__(self, objects: dict[str, list[dict[str, Any]]], readd: int = 0) -> None:
        self.objects = objects
        self.readd = readd
        self.patches: list[str] = []

    async def list(self, path: str) -> list[dict[str, Any]]:
        kind = "pods" if path.endswith("/pods") else "tts"
        return [dict(o) for o in self.objects[kind]]

    async def patch(self, path: str, body: Any, kind: str = "merge") -> dict[str, Any]:
        self.patches.append(path)
        plural = "pods" if "/pods/" in path else "tts"
        name = path.rsplit("/", 1)[-1]
        if name == "vanished":
            raise ApiError(404, "NotFound", "gone")
        items = self.objects[plural]
        index = next(i for i, o in enumerate(items) if o["metadata"]["name"] == name)
        items[index] = apply_patch(items[index], body)
        if plural == "tts" and self.readd:
            self.readd -= 1
            items[index]["metadata"]["finalizers"].append(FINALIZER)
        return items[index]


def run(rest: FakeRest, dry_run: bool = False) -> release.Released:
    return asyncio.run(
        release.release_everything(rest, [None], dry_run=dry_run, settle_seconds=0.0)
    )


def test_releases_finalizers_and_gates_and_reports_them() -> None:
    rest = FakeRest(
        {
            "tts": [tt("a", FINALIZER), tt("b"), tt("vanished", FINALIZER)],
            "pods": [pod("p0", SCHEDULING_GATE, "other.io/gate"), pod("p1"), pod("p2", "x/y")],
        }
    )
    released = run(rest)
    assert released.topologies == ["team/a"]
    assert released.pods == ["team/p0"]
    assert rest.objects["tts"][0]["metadata"]["finalizers"] == []
    assert rest.objects["pods"][0]["spec"]["schedulingGates"] == [{"name": "other.io/gate"}]
    assert rest.objects["pods"][2]["spec"]["schedulingGates"] == [{"name": "x/y"}]


def test_a_re_added_finalizer_is_released_again() -> None:
    rest = FakeRest({"tts": [tt("a", FINALIZER)], "pods": []}, readd=1)
    released = run(rest)
    assert released.topologies == ["team/a", "team/a"]
    assert rest.objects["tts"][0]["metadata"]["finalizers"] == []


def test_dry_run_changes_nothing() -> None:
    rest = FakeRest({"tts": [tt("a", FINALIZER)], "pods": [pod("p0", SCHEDULING_GATE)]})
    found = run(rest, dry_run=True)
    assert (found.topologies, found.pods) == (["team/a"], ["team/p0"])
    assert rest.patches == []


def test_scope_is_required(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["release"])
    assert exited.value.code == 2
    assert "--all" in capsys.readouterr().err


def test_a_missing_kubeconfig_is_one_line_and_exit_2(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing-kubeconfig"
    assert main(["release", "--all", "--kubeconfig", str(missing)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fabricfit release: ") and err.count("\n") == 1
