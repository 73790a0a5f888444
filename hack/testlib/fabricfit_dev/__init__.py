"""fabricfit's test library, shared by the tests, the demo and the benchmarks (never shipped).

- ``cluster``: the local control plane behind ``hack/cluster``
  (``python -m fabricfit_dev.cluster``): binaries, up/down/status, fake kwok GPU nodes, the
  optional controllers, Jobs and Kueue objects.
- ``kube``: the one Kubernetes client (``Clients``) and the reads several users share.
- ``waiting``: the one wait loop (``wait_for``).
- ``memapi`` and ``jsonpatch``: the in-memory API server the shell's unit tests run against.
- ``e2e``: building blocks of the end-to-end tests (objects, the operator process, Kueue, ...).
- ``demo``: ``make demo`` (``python -m fabricfit_dev.demo``).
- ``dataset``: the measured rows of ``tests/fixtures`` the accuracy report and the fit run on.
- ``capped``: a child process under a memory cap (fuzzing the CLI).
"""
