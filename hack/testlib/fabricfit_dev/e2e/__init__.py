"""Building blocks of the end-to-end tests (``tests/e2e``): the objects they create and read, the
operator as a process, Kueue, JobSet, LeaderWorkerSet and ComputeDomain helpers."""
