"""Turning a cluster's own nccl-tests runs into a fabric profile (pure).

``logs`` reads the stdout of the nccl-tests ``*_perf`` binaries into frozen rows; the fitter
(``fit``) builds on those rows. Nothing here reads files, the environment or the clock: the CLI
reads the files and passes their text in.
"""
