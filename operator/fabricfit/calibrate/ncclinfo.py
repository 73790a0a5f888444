"""What a log says about the hardware the run ran on (pure): the GPU model of the rank lines,
and the NCCL_DEBUG=INFO lines that name the network, its NICs, NVLink SHARP and channels.

Each line NCCL prints once per rank; every rank of a uniform cluster prints the same, so the
first value seen is kept. The lines read (NCCL @5067397c unless said otherwise):

===================================================  ========================================
line                                                 read as
===================================================  ========================================
``NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE``   RDMA NICs per node (one ``dev:port/IB``
                                                     or ``/RoCE`` each; transport/net_ib/
                                                     init.cc:513)
``NET/Socket : Using [0]eth0:10.0.0.1<0>``           TCP sockets, one per interface
                                                     (transport/net_socket.cc:77)
``NET/OFI Selected Provider is efa (found 32 nics)`` a libfabric provider and its NICs
                                                     (aws/aws-ofi-nccl src/nccl_ofi_net.c)
``Using network AWS Libfabric``                      the network plugin's name (init.cc:486)
``NVLS multicast support is [not ]available``        NVLink SHARP usable or not (nvls.cc:279)
``24 coll channels, ... 0 nvls channels, ...``       collective and NVLS channels
                                                     (init.cc:1646)
``comm ... nNodes 2 localRanks 8 ... MNNVL 1``       a multi-node NVLink domain (init.cc:1422)
===================================================  ========================================

Rank lines (``#  Rank 0 Group 0 Pid 43 on host device 0 [0x0f] NVIDIA A100-SXM4-40GB``) end
with the device name nccl-tests prints (cudaGetDeviceProperties' ``name``).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any

_A = re.ASCII
_IB_DEVICE = re.compile(r"[A-Za-z0-9_.\-]{1,64}:[0-9]{1,3}(?::[0-9]{0,5}){0,2}/(IB|RoCE)\b", _A)
_SOCKET_ADDRESS = re.compile(r"<[0-9]{1,5}>", _A)
_OFI = re.compile(r"NET/OFI Selected Provider is (\S{1,40}) \(found ([0-9]{1,5}) nics\)", _A)
_NETWORK = re.compile(r"NCCL INFO Using network (\S.{0,60}?)\s*$", _A)
_NVLS = re.compile(r"NVLS multicast support is (not )?available", _A)
_CHANNELS = re.compile(r"\b([0-9]{1,4}) coll channels, [^;]{0,80}?\b([0-9]{1,4}) nvls channels", _A)
_MNNVL = re.compile(
    r"\bnNodes [0-9]{1,6} localRanks [0-9]{1,6} localRank [0-9]{1,6} MNNVL ([01])", _A
)


@dataclass(frozen=True)
class LogHardware:
    """The hardware facts one log states; None where it says nothing."""

    gpu_models: tuple[str, ...] = ()  # distinct device names of the rank lines, sorted
    transport: str | None = None  # IB, RoCE, Socket, or a libfabric provider (efa)
    nics_per_node: int | None = None  # NICs NCCL found on a node
    network: str | None = None  # the network NCCL uses ("IB", "AWS Libfabric", ...)
    nvls_available: bool | None = None
    coll_channels: int | None = None
    nvls_channels: int | None = None
    multi_node_nvlink: bool | None = None  # MNNVL: an NVLink domain spanning nodes


@dataclass
class HardwareScan:
    """Accumulates :class:`LogHardware` while a log is scanned (the first value seen wins)."""

    gpu_models: set[str] = field(default_factory=set)
    seen: LogHardware = field(default_factory=LogHardware)

    def gpu(self, name: str) -> None:
        self.gpu_models.add(" ".join(name.split())[:80])

    def line(self, line: str) -> bool:
        """Record an NCCL INFO hardware line; False when ``line`` is none of them."""
        if "NET/IB : Using" in line:
            links = _IB_DEVICE.findall(line)
            if links:
                self._first(transport="RoCE" if "RoCE" in links else "IB", nics_per_node=len(links))
        elif "NET/Socket : Using" in line:
            self._first(
                transport="Socket", nics_per_node=len(_SOCKET_ADDRESS.findall(line)) or None
            )
        elif found := _OFI.search(line):
            self._first(transport=found.group(1), nics_per_node=int(found.group(2)))
        elif found := _NETWORK.search(line):
            self._first(network=found.group(1))
        elif found := _NVLS.search(line):
            self._first(nvls_available=found.group(1) is None)
        elif found := _CHANNELS.search(line):
            self._first(coll_channels=int(found.group(1)), nvls_channels=int(found.group(2)))
        elif found := _MNNVL.search(line):
            self._first(multi_node_nvlink=found.group(1) == "1")
        else:
            return False
        return True

    def _first(self, **values: Any) -> None:
        fresh = {k: v for k, v in values.items() if v is not None and getattr(self.seen, k) is None}
        if fresh:
            self.seen = dataclasses.replace(self.seen, **fresh)

    def result(self) -> LogHardware:
        return dataclasses.replace(self.seen, gpu_models=tuple(sorted(self.gpu_models)))
