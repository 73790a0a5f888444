"""The cluster as data: nodes and pods in, a frozen ClusterSnapshot out (pure)."""
