"""Starting a control-plane process and reporting one that dies during start-up."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabricfit_dev.cluster.processes import ClusterError, start, wait_until


def test_a_process_that_dies_in_start_up_is_reported_with_its_last_words(tmp_path: Path) -> None:
    # a wrapper script runs as its shell, so it stops "running its binary" at once; the error
    # it prints a moment later is what the report must quote, not what the log held before
    log = tmp_path / "controller.log"
    log.write_text("customresourcedefinition.apiextensions.k8s.io/widgets serverside-applied\n")
    script = tmp_path / "controller"
    script.write_text(
        "#!/bin/sh\nsleep 0.5\necho 'flag provided but not defined: -config' >&2\nexit 2\n"
    )
    script.chmod(0o755)
    started = start("controller", [str(script)], log)
    with pytest.raises(ClusterError) as raised:
        wait_until("controller", lambda: False, started, timeout_seconds=30)
    assert str(raised.value) == (
        f"controller exited during start-up: flag provided but not defined: -config (log: {log})"
    )
