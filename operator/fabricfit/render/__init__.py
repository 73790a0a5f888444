"""Pure builders: workload and pod patches, Kueue annotations, status bodies, plan views."""
