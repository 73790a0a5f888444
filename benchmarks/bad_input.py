"""What refusing bad input costs: peak memory and wall time of ``fabricfit plan`` per class.

Each row runs ``python -m fabricfit plan`` as a child process under a 1 GiB address-space cap
(``RLIMIT_AS``, set by the child itself); the child reports its own peak RSS (VmHWM) and the
wall time is measured around it. The first row is a valid plan on a small cluster, for
scale (most of ~250 ms and ~35 MiB is the interpreter and its imports).
Usage: ``python benchmarks/bad_input.py``.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path

from fabricfit_dev.capped import run_capped

TT = "gpusPerPod: 8\nparallelism: {tensor: 8, data: 2}\n"


def nodes(count: int) -> str:
    ready = {"conditions": [{"type": "Ready", "status": "True"}]}
    items = [
        {
            "kind": "Node",
            "metadata": {"name": f"n{i:04d}"},
            "status": {**ready, "allocatable": {"nvidia.com/gpu": "8"}},
        }
        for i in range(count)
    ]
    return json.dumps({"kind": "List", "items": items})


def bomb(levels: int) -> str:
    lines = ["x-anchors:", "  l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"  l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 10) + "]" for i in range(1, levels)]
    node = f"{{kind: Node, metadata: {{name: n0, labels: {{a: *l{levels - 1}}}}}}}"
    return "\n".join([*lines, f"items: [{node}]", ""])


CASES: dict[str, tuple[str, str]] = {  # name: (nodes file text or a path, topology text)
    "valid plan, 4 nodes (for scale)": (nodes(4), TT),
    "alias bomb 10^12 in a label": (bomb(12), TT),
    "alias bomb 10^100 in a label": (bomb(100), TT),
    "integer of 100,000 digits": ('{"items": [' + "9" * 100_000 + "]}", TT),
    "nesting 100,000 deep": ("[" * 100_000, TT),
    "undecodable bytes": ("kind: \udcff\n", TT),
    "explicit tag !!timestamp x": ("a: !!timestamp x\n", TT),
    "/dev/zero as nodes": ("@/dev/zero", TT),
    "4,097 pods of 64 GPUs": (nodes(4), "gpusPerPod: 64\nparallelism: {tensor: 64, data: 4097}\n"),
    "largest valid job, empty cluster (exit 1)": (
        nodes(0),
        "gpusPerPod: 64\nparallelism: {tensor: 64, data: 4096}\n",
    ),
}


def run(args: list[str], stdin: int | None = None) -> tuple[int, float, float, str]:
    done = run_capped(args, stdin=stdin if stdin is not None else subprocess.DEVNULL)
    return done.code, done.seconds, done.peak_mib, done.stderr.strip()


def main() -> None:
    print(f"{'input':<44} {'exit':>4} {'peak RSS':>9} {'time':>8}  message")
    with tempfile.TemporaryDirectory() as tmp:
        for name, (nodes_text, tt_text) in CASES.items():
            nodes_path = nodes_text[1:] if nodes_text.startswith("@") else str(Path(tmp) / "n")
            if not nodes_text.startswith("@"):
                Path(nodes_path).write_bytes(nodes_text.encode("utf-8", "surrogateescape"))
            (Path(tmp) / "tt").write_text(tt_text)
            code, seconds, peak, message = run(
                ["plan", "--nodes", nodes_path, "--topology", str(Path(tmp) / "tt")]
            )
            print(
                f"{name:<44} {code:>4} {peak:>5.0f} MiB {seconds * 1000:>5.0f} ms  {message[:70]}"
            )
        with subprocess.Popen(["cat", "/dev/zero"], stdout=subprocess.PIPE) as source:
            (Path(tmp) / "tt").write_text(TT)
            assert source.stdout is not None
            code, seconds, peak, message = run(
                ["plan", "--nodes", "-", "--topology", str(Path(tmp) / "tt")],
                stdin=source.stdout.fileno(),
            )
            source.kill()
        label = "endless stdin (read up to the 256 MiB cap)"
        print(f"{label:<44} {code:>4} {peak:>5.0f} MiB {seconds * 1000:>5.0f} ms  {message[:70]}")


if __name__ == "__main__":
    main()
