"""Reference pages of the docs site, generated from the code (``make docs-ref``).

Theory of operation
-------------------
Each page of ``docs/reference/`` that states a fact the code owns — the CRD's fields, the CLI's
flags, the metrics, the chart's values and RBAC rules, the condition reasons, the label keys —
is rendered here from that code, never written by hand. :data:`pages.PAGES` maps each page to
the function that renders it; ``python -m fabricfit_dev.docsgen`` writes them and ``--check``
exits 1 naming the stale ones (a unit test runs the same comparison). The RBAC page renders the
chart with the real helm binary, so it is marked as needing it.
"""
