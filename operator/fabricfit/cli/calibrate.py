"""``fabricfit calibrate``: fit a fabric profile to a cluster's own nccl-tests logs (offline).

Theory of operation
-------------------
Every ``LOG`` is the stdout of ``all_reduce_perf``, ``all_gather_perf``, ``reduce_scatter_perf``,
``alltoall_perf`` or ``sendrecv_perf`` (several runs in one file are split at their headers;
:func:`fabricfit.calibrate.logs.parse_logs`). Node and GPU counts come from the ``# Rank``
lines, else from ``--nodes``/``--gpus-per-node``; a row whose time, algbw and busbw contradict
each other is refused (file:line), never fitted.

The base profile is the hardware the logs name (:mod:`fabricfit.calibrate.hardware`): the GPU
model of the rank lines picks the board's preset, NCCL_DEBUG=INFO lines refine it (EFA: AWS p5;
the RDMA NICs per node; NVLS off where NCCL says so); a log naming no GPU, or a board no preset
describes, is exit 2 asking for ``--fabric``. ``--fabric`` overrides it (a line on stderr says
where the logs disagree; NVLS stays off where their board has none; a TPU profile is refused:
it runs no NCCL). ``--nics-per-node`` gives the NIC count the logs do not print.

A run made with ``NCCL_ALGO``/``NCCL_PROTO`` (or NVLS off, another ``NCCL_BUFFSIZE``) is priced
as NCCL ran it: from the log's NCCL_DEBUG=INFO lines, or ``--nccl-algo``/``--nccl-proto`` for
logs without them (the flags win); the written profile keeps the base's NCCL set-up. The fit
(:func:`fabricfit.calibrate.fit.fit_profile` with the scale terms) takes at most 16 rows of a run
and 192 in all (:func:`fabricfit.calibrate.scale.split_rows`; the rest are predicted as held
out), fits only the fields the rows constrain and says which were kept from the base and why;
with runs at two or more node counts it also reports the error at each node count, fitted and
held out (a fit without that node count, :func:`fabricfit.calibrate.scale.by_node_count`). The
result is a profile file of the preset schema (``--output``; loadable by ``--fabric-file`` and
``fabricProfiles``). Limits: :data:`MAX_LOGS` files, :data:`MAX_ROWS` rows in all,
``logs.MAX_RANKS`` ranks a run, ``logs.MAX_LOG_CHARS`` characters a file. Unreadable or
unparsable input is exit 2 with one line naming the file (and line). Imports neither kopf nor
the Kubernetes client.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from fabricfit.calibrate.fit import (
    FitError,
    FitResult,
    Measurement,
    fit_profile,
    measurements_from_log,
    shared_release,
)
from fabricfit.calibrate.hardware import (
    BaseChoice,
    HardwareError,
    apply_log_facts,
    choose_base,
    contradictions,
    describe_hardware,
    merge,
    without_missing_nvls,
)
from fabricfit.calibrate.logs import MAX_RANKS, LogError, LogHardware, NcclTestsLog, parse_logs
from fabricfit.calibrate.report import (
    median_error,
    render_bounds,
    render_env,
    render_fields,
    render_table,
)
from fabricfit.calibrate.scale import (
    by_node_count,
    describe_scale,
    render_node_counts,
    split_rows,
)
from fabricfit.calibrate.table import check_timings
from fabricfit.cli.common import EXIT_OK, Parser, UsageError, one_line, profile_name
from fabricfit.cli.inputs import read_bytes, shown
from fabricfit.cli.progress import Progress
from fabricfit.cost import Collective
from fabricfit.cost.collectives import bus_factor
from fabricfit.fabric.documents import DocumentError, decode_text
from fabricfit.fabric.names import unknown_name
from fabricfit.fabric.profiles import PRESETS, FabricProfile, ProfileError, get_profile
from fabricfit.fabric.profiles.catalog import dump_profile
from fabricfit.fabric.profiles.ncclsetup import NcclSetupError, run_env_fields

MAX_NAME_CHARS = 63
MAX_LOGS = 256  # files on one command line
MAX_ROWS = 8_192  # result rows over every log: a few hundred runs of a full sweep
MAX_NODES = 8_192  # --nodes; with --gpus-per-node at most logs.MAX_RANKS ranks
MAX_GPUS_PER_NODE = 72


def configure(parser: Parser) -> None:
    parser.add_argument("logs", nargs="+", metavar="LOG", help="nccl-tests stdout files")
    parser.add_argument("--nodes", type=int, metavar="N", help="nodes, when the log has no ranks")
    parser.add_argument(
        "--gpus-per-node", type=int, metavar="G", help="GPUs per node, when the log has no ranks"
    )
    parser.add_argument(
        "--nics-per-node",
        type=int,
        metavar="K",
        help="RDMA NICs per node, when the logs do not list them (NCCL_DEBUG=INFO does)",
    )
    parser.add_argument(
        "--fabric",
        type=profile_name,
        metavar="BASE",
        help="preset to start from (default: the preset of the GPUs and network the logs name)",
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


def read_logs(paths: Sequence[str], collective: Collective | None = None) -> list[NcclTestsLog]:
    """Every run of every file in ``paths``; UsageError naming the file (and line)."""
    if len(paths) > MAX_LOGS:
        raise UsageError(f"{len(paths)} log files: at most {MAX_LOGS} at once")
    found: list[NcclTestsLog] = []
    for path in paths:
        try:
            text = decode_text(read_bytes(path, "log"))
        except DocumentError as err:
            raise UsageError(f"log file {shown(path)}: {err}") from None
        try:
            found += parse_logs(text, shown(path), collective)
        except LogError as err:
            raise UsageError(str(err)) from None
        rows = sum(len(log.rows) for log in found)
        if rows > MAX_ROWS:
            raise UsageError(f"{rows} result rows in the logs: at most {MAX_ROWS} at once")
    return found


def read_measurements(
    paths: Sequence[str],
    nodes: int | None,
    gpus_per_node: int | None,
    collective: Collective | None = None,
    env: Mapping[str, str] | None = None,
) -> list[Measurement]:
    """Every row of every run in ``paths``, priced in the NCCL environment its log prints, ``env``
    overriding it; UsageError naming the file (and line)."""
    return measurements_of(read_logs(paths, collective), nodes, gpus_per_node, env)


def measurements_of(
    logs: Sequence[NcclTestsLog],
    nodes: int | None,
    gpus_per_node: int | None,
    env: Mapping[str, str] | None = None,
) -> list[Measurement]:
    """The logs' rows as measurements, each row's numbers checked against each other
    (``table.check_timings``); UsageError naming the file (and line)."""
    found: list[Measurement] = []
    for log in logs:
        try:
            rows = measurements_from_log(log, nodes=nodes, gpus_per_node=gpus_per_node)
            if rows and log.collective is not None:
                factor = bus_factor(log.collective, rows[0].nodes * rows[0].gpus_per_node)
                for row in log.rows:
                    check_timings(log.path, row, factor)
        except (LogError, FitError) as err:
            raise UsageError(str(err)) from None
        found += rows
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


def _base(args: argparse.Namespace, hw: LogHardware, rows: Sequence[Measurement]) -> BaseChoice:
    """The base profile: the hardware the logs name, or ``--fabric`` (warning where the logs
    disagree with it), with the logs' facts and ``--nics-per-node`` applied."""
    nvls_env = any(k == "NCCL_NVLS_ENABLE" for m in rows for k, _ in m.nccl_env)
    try:
        if args.fabric is None:
            choice = choose_base(hw, nvls_set_by_env=nvls_env)
        else:
            choice = _named_base(get_profile(args.fabric), hw, rows, nvls_env)
    except (HardwareError, ProfileError) as err:
        raise UsageError(str(err)) from None
    profile, notes = choice.profile, [*choice.notes, *partial_nodes(choice.profile, rows)]
    if args.nics_per_node is not None:
        profile = dataclasses.replace(profile, nics_per_node=args.nics_per_node)
        notes.append(f"NICs per node: {args.nics_per_node} (--nics-per-node)")
    return BaseChoice(profile, choice.why, tuple(notes))


def partial_nodes(base: FabricProfile, rows: Sequence[Measurement]) -> list[str]:
    """A note when every run uses fewer GPUs a node than the base's board holds: priced as that
    many of its GPUs, which is not a smaller board (a 4-GPU HGX board has no NVSwitch)."""
    most = max(m.gpus_per_node for m in rows)
    if most >= base.gpus_per_node or base.gpus_per_nvlink_domain != base.gpus_per_node:
        return []
    return [
        f"GPUs per node: the runs use {most}, {base.name}'s board has {base.gpus_per_node}:"
        f" priced as {most} of its GPUs; nodes of {most} GPUs (a board without NVSwitch) are"
        " not what it describes: name a base with --fabric"
    ]


def _named_base(
    named: FabricProfile, hw: LogHardware, rows: Sequence[Measurement], nvls_env: bool
) -> BaseChoice:
    if named.is_torus:
        raise UsageError(
            f"--fabric {named.name} is a TPU profile: TPUs run no NCCL, so nccl-tests logs"
            " cannot calibrate it; name a GPU preset"
        )
    found = contradictions(named, hw)
    most = max(m.gpus_per_node for m in rows)
    if most > named.gpus_per_node:
        found.append(
            f"the runs use {most} GPUs a node, {named.name}'s nodes have {named.gpus_per_node}"
        )
    for line in found:
        print(one_line(f"fabricfit calibrate: warning: {line}"), file=sys.stderr)
    profile, notes = apply_log_facts(named, hw, nvls_set_by_env=nvls_env)
    why = f"base fabric {named.name} (--fabric)"
    return BaseChoice(without_missing_nvls(profile, hw), why, tuple(notes))


def _name(args: argparse.Namespace, base: FabricProfile) -> str:
    name = args.name or f"{base.name}-calibrated"[:MAX_NAME_CHARS]
    if name in PRESETS:
        raise UsageError(f"--name {name} is a preset's name; a calibrated profile needs its own")
    return name


def _check_flags(args: argparse.Namespace) -> Collective | None:
    limits = (
        ("--nodes", args.nodes, MAX_NODES),
        ("--gpus-per-node", args.gpus_per_node, MAX_GPUS_PER_NODE),
        ("--nics-per-node", args.nics_per_node, 64),
    )
    for flag, value, high in limits:
        if value is not None and not 1 <= value <= high:
            raise UsageError(f"{flag} must be between 1 and {high}, got {value}")
    if args.nodes and args.gpus_per_node and args.nodes * args.gpus_per_node > MAX_RANKS:
        raise UsageError(
            f"--nodes {args.nodes} x --gpus-per-node {args.gpus_per_node} is over the limit of"
            f" {MAX_RANKS} ranks"
        )
    if args.collective is None:
        return None
    try:
        return Collective(args.collective)
    except ValueError:
        names = [c.value for c in Collective]
        raise UsageError(unknown_name("--collective", args.collective, names)) from None


def execute(args: argparse.Namespace) -> int:
    collective = _check_flags(args)
    env = nccl_env_flags(args)
    with Progress("fabricfit calibrate") as progress:
        progress.update(phase=f"reading {len(args.logs)} logs")
        logs = read_logs(args.logs, collective)
        rows = measurements_of(logs, args.nodes, args.gpus_per_node, env)
        progress.update(phase=f"choosing the base for {len(rows)} rows")
        hw = merge(log.hardware for log in logs)
        choice = _base(args, hw, rows)
        base = choice.profile
        release = shared_release(rows)
        if release is not None:  # the cluster's NCCL: the fitted profile's tuner follows it
            base = dataclasses.replace(base, nccl_version=release)
        fit_rows, held_rows = split_rows(rows)
        progress.update(phase=f"fitting {base.name} to {len(fit_rows)} rows")
        try:
            result = fit_profile(
                base, fit_rows, name=_name(args, base), held_out=held_rows, scale=True
            )
            progress.update(phase="the error by node count (each left out in turn)")
            counts = by_node_count(base, fit_rows, held_rows, result)
        except (FitError, ValueError) as err:
            raise UsageError(f"cannot fit {base.name} to the logs: {err}") from None
    print(describe_hardware(hw, rows))
    print(choice.why)
    for note in choice.notes:
        print(f"  {note}")
    print(f"base fabric {base.name}: median |error| {median_error(base, rows):.1%} before fitting")
    if release is not None:
        print(f"NCCL {release} (the logs' release): the profile's tuner follows it")
    if (line := render_env(rows)) is not None:
        print(line)
    print(render_table(result))
    print(render_fields(base, result))
    if (line := render_bounds(result)) is not None:
        print(line)
    print(describe_scale(result.profile, result, rows))
    print(render_node_counts(counts))
    if args.output:
        _write(args, base, result)
    return EXIT_OK


def _write(args: argparse.Namespace, base: FabricProfile, result: FitResult) -> None:
    sources = ", ".join(sorted({shown(p) for p in args.logs}))
    header = f"Fitted by fabricfit calibrate from {base.name} on: {sources}"
    text = dump_profile(result.profile, header=header)
    try:
        Path(args.output).write_text(text, encoding="utf-8")
    except (OSError, ValueError) as err:
        reason = getattr(err, "strerror", None) or "invalid path"
        raise UsageError(f"cannot write {shown(args.output)}: {reason}") from None
    print(f"wrote {result.profile.name} to {shown(args.output)}")
