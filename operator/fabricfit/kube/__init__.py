"""The only package that talks to the Kubernetes API server (besides kopf's own watches)."""
