"""A real, Docker-less Kubernetes control plane on loopback for tests and the demo.

etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok (the fake kubelet) are
started as detached processes from binaries that ``hack/cluster build`` compiles from Go modules.
``up`` records every pid and port in a state directory; ``down`` stops exactly those processes.
"""
