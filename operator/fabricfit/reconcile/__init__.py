"""The operator's service layer: one idempotent reconcile of a TrainingTopology, pod pinning,
and release on deletion. Handlers (kopf) call into this package; it calls the pure core and the
``kube`` package, and holds the operator's in-memory state (inventory, reservation ledger)."""
