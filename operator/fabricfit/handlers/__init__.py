"""kopf handlers: thin adapters from watch events to the reconcile service."""
