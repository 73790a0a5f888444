"""fabricfit: topology-aware placement of distributed GPU training on Kubernetes.

The package is a functional core (``api``, ``fabric``, ``cost``, ``placement``, ``render``) wrapped
by an imperative shell (``kube``, ``handlers``, ``metrics``, ``cli``). The core is pure: it takes
frozen inputs, returns frozen results, and never talks to the API server, reads the clock or the
environment.
"""

__version__ = "0.1.0"
