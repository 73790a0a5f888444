"""``fabricfit calibrate``: fit a fabric profile to a cluster's own nccl-tests logs (offline).

Theory of operation
-------------------
Every ``LOG`` is the stdout of ``all_reduce_perf``, ``all_gather_perf``, ``reduce_scatter_perf``,
``alltoall_perf`` or ``sendrecv_perf`` (several runs in one file are split at their headers;
:func:`fabricfit.calibrate.logs.parse_logs`). Node and GPU counts come from the ``# Rank``
lines, else from ``--nodes``/``--gpus-per-node``. The rows become measurements, the starting
profile is ``--fabric`` or the preset whose predictions are closest (median |busbw error|), and
:func:`fabricfit.calibrate.fit.fit_profile` fits its bandwidths, latencies and efficiencies.
A run made with ``NCCL_ALGO``/``NCCL_PROTO`` (or NVLS off, another ``NCCL_BUFFSIZE``) is
priced as NCCL ran it: from the log's NCCL_DEBUG=INFO lines, or ``--nccl-algo``/``--nccl-proto``
for logs without them (the flags win); the written profile keeps the base's NCCL set-up.
Only the fields the rows constrain are fitted (small-message logs move latencies, never a
bandwidth or a fill); a second table gives every fittable field's base and fitted value and
says which were kept from the base, and why. The result is written as a profile file of the
preset schema (``--output``; loadable by ``--fabric-file`` and ``fabricProfiles``) and a table
compares each row with the fit.
Unreadable or unparsable input is exit 2 with one line naming the file (and line). Imports
neither kopf nor the Kubernetes client.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path

from fabricfit.calibrate.fit import (
    FitError,
    FitResult,
    Measurement,
    fit_profile,
    measurements_from_log,
    predict,
    shared_release,
)
from fabricfit.calibrate.logs import LogError, NcclTestsLog, parse_logs
from fabricfit.cli.common import EXIT_OK, Parser, UsageError, profile_name
from fabricfit.cli.inputs import read_bytes, shown
from fabricfit.cli.progress import Progress
from fabricfit.cost import Collective
from fabricfit.fabric.documents import DocumentError, decode_text
from fabricfit.fabric.names import unknown_name
from fabricfit.fabric.profiles import PRESETS, FabricProfile, ProfileError, get_profile
from fabricfit.fabric.profiles.catalog import dump_profile
from fabricfit.fabric.profiles.ncclsetup import NcclSetupError, run_env_fields

MAX_NAME_CHARS = 63


def configure(parser: Parser) -> None:
    parser.add_argument("logs", nargs="+", metavar="LOG", help="nccl-tests stdout files")
    parser.add_argument("--nodes", type=int, metavar="N", help="nodes, when the log has no ranks")
    parser.add_argument(
        "--gpus-per-node", type=int, metavar="G", help="GPUs per node, when the log has no ranks"
    )
    parser.add_argument(
        "--fabric",
        type=profile_name,
        metavar="BASE",
        help="preset to start from (default: the preset that fits the logs best)",
    )
    parser.add_argument(
        "--collective",
        metavar="C",
        help="collective of logs that do not name their test (e.g. all-reduce)",
    )
    parser.add_argument(
        "--nccl-algo",
        metavar="ALGOS",
        help="NCCL_ALGO the runs were made with, NCCL's syntax (e.g. Ring, ^NVLS)",
    )
    parser.add_argument(
        "--nccl-proto",
        metavar="PROTOS",
        help="NCCL_PROTO the runs were made with, NCCL's syntax (e.g. Simple, ^LL128)",
    )
    parser.add_argument("--name", type=profile_name, help="profile name (default BASE-calibrated)")
    parser.add_argument("--output", metavar="PROFILE.yaml", help="write the fitted profile here")


def read_measurements(
    paths: Sequence[str],
    nodes: int | None,
    gpus_per_node: int | None,
    collective: Collective | None = None,
    env: Mapping[str, str] | None = None,
) -> list[Measurement]:
    """Every row of every run in ``paths``, priced in the NCCL environment its log prints, ``env``
    overriding it; UsageError naming the file (and line)."""
    found: list[Measurement] = []
    for path in paths:
        try:
            text = decode_text(read_bytes(path, "log"))
        except DocumentError as err:
            raise UsageError(f"log file {shown(path)}: {err}") from None
        try:
            for log in parse_logs(text, shown(path), collective):
                found += measurements_from(log, nodes, gpus_per_node)
        except (LogError, FitError) as err:
            raise UsageError(str(err)) from None
    if not found:
        raise UsageError("no measurement rows in the logs (sizes and times are all zero)")
    if env:
        found = [dataclasses.replace(m, nccl_env=_merged(m.nccl_env, env)) for m in found]
    return found


def _merged(
    logged: tuple[tuple[str, str], ...], given: Mapping[str, str]
) -> tuple[tuple[str, str], ...]:
    return tuple(sorted({**dict(logged), **given}.items()))


def nccl_env_flags(args: argparse.Namespace) -> dict[str, str]:
    """``--nccl-algo``/``--nccl-proto`` as NCCL environment; UsageError for a value NCCL would
    not run with."""
    env = {}
    for key, value in (("NCCL_ALGO", args.nccl_algo), ("NCCL_PROTO", args.nccl_proto)):
        if value is None:
            continue
        try:
            run_env_fields(key, value)
        except NcclSetupError as err:
            flag = "--" + key.lower().replace("_", "-")
            raise UsageError(f"invalid {flag}: {err}") from None
        env[key] = value
    return env


def render_env(rows: Sequence[Measurement]) -> str | None:
    """One line naming the NCCL environments the rows were priced in, if any."""
    found = sorted({m.nccl_env for m in rows if m.nccl_env})
    if not found:
        return None
    shown_env = "; ".join(" ".join(f"{k}={v.removesuffix('.')}" for k, v in env) for env in found)
    return f"runs priced as made with {shown_env} (the profile keeps the base's NCCL set-up)"


def measurements_from(log: NcclTestsLog, nodes: int | None, gpus: int | None) -> list[Measurement]:
    return list(measurements_from_log(log, nodes=nodes, gpus_per_node=gpus))


def median_error(profile: FabricProfile, rows: Sequence[Measurement]) -> float:
    """Median |busbw error| of ``profile`` on ``rows`` (inf when it cannot price them)."""
    try:
        return statistics.median(abs(predict(profile, m).error) for m in rows)
    except (ValueError, ZeroDivisionError):
        return float("inf")


def choose_base(rows: Sequence[Measurement]) -> FabricProfile:
    """The GPU preset whose predictions are closest to ``rows`` (ties: by name)."""
    gpus = max(m.gpus_per_node for m in rows)
    fits = [p for p in PRESETS.values() if not p.is_torus and p.gpus_per_node >= gpus]
    scored = sorted((median_error(p, rows), p.name) for p in fits)
    if not scored or scored[0][0] == float("inf"):
        raise UsageError(f"no preset can price these logs ({gpus} GPUs per node)")
    return PRESETS[scored[0][1]]


def render_table(result: FitResult) -> str:
    head = f"{'collective':<15}{'nodes':>8}{'size (B)':>17}"
    lines = [f"{head}{'measured':>11}{'predicted':>11}{'error':>9}"]
    for row in result.rows:
        m = row.measurement
        lines.append(
            f"{m.collective.value:<15}{f'{m.nodes}x{m.gpus_per_node}':>8}{m.size_bytes:>17,}"
            f"{m.busbw_gb_per_s:>11.2f}{row.predicted_busbw_gb_per_s:>11.2f}{row.error:>+9.1%}"
        )
    lines.append(
        "busbw in GB/s, measured at the faster of out-of-place and in-place;"
        " error = predicted/measured - 1"
    )
    lines.append(
        f"fitted {len(result.rows)} rows: median |error| {result.median_abs_error:.1%}, "
        f"worst {result.worst_abs_error:.1%}"
    )
    return "\n".join(lines)


def render_fields(base: FabricProfile, result: FitResult) -> str:
    """Every fittable field: its base and fitted value, fitted or kept from the base (and why)."""
    kept = dict(result.kept_fields)
    names = (*result.fitted_fields, *kept)
    width = max((len(n) + 1 for n in names), default=24)
    lines = [f"{'field':<{width}}{base.name:>11}{'fitted':>11}"]
    for name in names:
        old, new = getattr(base, name), getattr(result.profile, name)
        how = f"kept: {kept[name]}" if name in kept else "fitted"
        lines.append(f"{name:<{width}}{old:>11.4g}{new:>11.4g}  {how}")
    return "\n".join(lines)


def _base(args: argparse.Namespace, rows: Sequence[Measurement]) -> FabricProfile:
    if args.fabric is None:
        return choose_base(rows)
    try:
        return get_profile(args.fabric)
    except ProfileError as err:
        raise UsageError(str(err)) from None


def _name(args: argparse.Namespace, base: FabricProfile) -> str:
    name = args.name or f"{base.name}-calibrated"[:MAX_NAME_CHARS]
    if name in PRESETS:
        raise UsageError(f"--name {name} is a preset's name; a calibrated profile needs its own")
    return name


def execute(args: argparse.Namespace) -> int:
    for flag, value in (("--nodes", args.nodes), ("--gpus-per-node", args.gpus_per_node)):
        if value is not None and not 1 <= value <= 65_536:
            raise UsageError(f"{flag} must be between 1 and 65536, got {value}")
    collective = None
    if args.collective is not None:
        try:
            collective = Collective(args.collective)
        except ValueError:
            names = [c.value for c in Collective]
            raise UsageError(unknown_name("--collective", args.collective, names)) from None
    env = nccl_env_flags(args)
    with Progress("fabricfit calibrate") as progress:
        progress.update(phase=f"reading {len(args.logs)} logs")
        rows = read_measurements(args.logs, args.nodes, args.gpus_per_node, collective, env)
        progress.update(phase=f"choosing the base for {len(rows)} rows")
        base = _base(args, rows)
        release = shared_release(rows)
        if release is not None:  # the cluster's NCCL: the fitted profile's tuner follows it
            base = dataclasses.replace(base, nccl_version=release)
        progress.update(phase=f"fitting {base.name} to {len(rows)} rows")
        try:
            result = fit_profile(base, rows, name=_name(args, base))
        except (FitError, ValueError) as err:
            raise UsageError(f"cannot fit {base.name} to the logs: {err}") from None
    print(f"base fabric {base.name}: median |error| {median_error(base, rows):.1%} before fitting")
    if release is not None:
        print(f"NCCL {release} (the logs' release): the profile's tuner follows it")
    if (line := render_env(rows)) is not None:
        print(line)
    print(render_table(result))
    print(render_fields(base, result))
    if args.output:
        sources = ", ".join(sorted({shown(p) for p in args.logs}))
        header = f"Fitted by fabricfit calibrate from {base.name} on: {sources}"
        text = dump_profile(result.profile, header=header)
        try:
            Path(args.output).write_text(text, encoding="utf-8")
        except (OSError, ValueError) as err:
            reason = getattr(err, "strerror", None) or "invalid path"
            raise UsageError(f"cannot write {shown(args.output)}: {reason}") from None
        print(f"wrote {result.profile.name} to {shown(args.output)}")
    return EXIT_OK
