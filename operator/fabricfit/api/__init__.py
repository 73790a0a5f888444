"""The contract with the outside world: CRD models, label and annotation keys."""
