"""Names other components rely on: API group, label keys, annotation keys, scheduling gate.

Keep these exact; they are part of fabricfit's public contract (README; docs/architecture.md).
"""

from typing import Final

GROUP: Final = "fabricfit.dev"
VERSION: Final = "v1alpha1"
KIND: Final = "TrainingTopology"
PLURAL: Final = "trainingtopologies"
SINGULAR: Final = "trainingtopology"
SHORT_NAME: Final = "tt"

# Native node labels (every key optional).
LABEL_PREFIX: Final = "topology.fabricfit.dev/"
LABEL_NVLINK_DOMAIN: Final = LABEL_PREFIX + "nvlink-domain"
LABEL_RAIL_GROUP: Final = LABEL_PREFIX + "rail-group"
LABEL_RACK: Final = LABEL_PREFIX + "rack"
LABEL_SPINE: Final = LABEL_PREFIX + "spine"
LABEL_RAILS: Final = LABEL_PREFIX + "rails"
LABEL_FABRIC: Final = LABEL_PREFIX + "fabric"

# Node taint (any value and effect) that marks a node for maintenance, like a cordon: plans
# avoid it and the ranks planned on it are re-placed (a NoExecute effect also makes Kubernetes
# evict the pods, which then land where the new plan says).
MAINTENANCE_TAINT: Final = "fabricfit.dev/maintenance"

GPU_RESOURCE: Final = "nvidia.com/gpu"
# Dynamic Resource Allocation (resource.k8s.io): NVIDIA's DRA driver publishes its GPUs as
# devices of this driver in ResourceSlices, and its chart installs a DeviceClass of this name
# selecting them (kubernetes-sigs/dra-driver-nvidia-gpu, formerly NVIDIA/k8s-dra-driver-gpu).
DRA_GROUP: Final = "resource.k8s.io"
DRA_VERSION: Final = "v1"
DRA_GPU_DRIVER: Final = "gpu.nvidia.com"
DRA_GPU_DEVICE_CLASS: Final = "gpu.nvidia.com"
# dranet (kubernetes-sigs/dranet, cmd/dranet/app.go) publishes a node's network interfaces as
# devices of this driver; RDMA-capable ones carry the boolean attribute dra.net/rdma.
DRA_NIC_DRIVER: Final = "dra.net"
# Standard device attributes (KEP-4381; k8s.io/dynamic-resource-allocation deviceattribute):
# the PCIe root complex a device hangs off ("pci<domain>:<bus>") and a PCI device's bus id.
PCIE_ROOT_ATTRIBUTE: Final = "resource.kubernetes.io/pcieRoot"
PCI_BUS_ID_ATTRIBUTE: Final = "resource.kubernetes.io/pciBusID"
HOSTNAME_LABEL: Final = "kubernetes.io/hostname"
# Who picks the GPUs of a pod on its node (plan --json gpuChoice, status.gpuChoice): fabricfit,
# which allocates each pod's DRA claim the devices it planned, or the device plugin / kube-
# scheduler's allocator, whose hand-out the plan is then priced on.
GPU_CHOICE_ENFORCED: Final = "enforced"
GPU_CHOICE_NOT_ENFORCED: Final = "not-enforced"

# Finalizer on every TrainingTopology, so deletion releases its GPUs and ungates its pods.
FINALIZER: Final = "fabricfit.dev/finalizer"
# Scheduling gate fabricfit puts on pod templates in `pinned` mode.
SCHEDULING_GATE: Final = "fabricfit.dev/placement"
# Pod-template label naming the TrainingTopology that placed the pods (the rail-group pod
# affinity selects on it, and the pod watch finds a topology's pods by it).
TOPOLOGY_LABEL: Final = "fabricfit.dev/topology"

# Kueue keys (exact names: kueue.sigs.k8s.io/docs/concepts/topology_aware_scheduling).
KUEUE_QUEUE_LABEL: Final = "kueue.x-k8s.io/queue-name"
KUEUE_REQUIRED_TOPOLOGY: Final = "kueue.x-k8s.io/podset-required-topology"
KUEUE_PREFERRED_TOPOLOGY: Final = "kueue.x-k8s.io/podset-preferred-topology"
KUEUE_SLICE_REQUIRED_TOPOLOGY: Final = "kueue.x-k8s.io/podset-slice-required-topology"
KUEUE_SLICE_SIZE: Final = "kueue.x-k8s.io/podset-slice-size"
#: Multi-layer slices (Kueue >= 0.17, on by default in 0.19): a JSON list, outer layer first, of
#: ``{"topology": <level>, "size": <pods>}``; excludes the two single-layer slice keys above.
KUEUE_SLICE_CONSTRAINTS: Final = "kueue.x-k8s.io/podset-slice-required-topology-constraints"
#: Two PodSets (one of them a single pod) that Kueue places in one domain of the same level.
KUEUE_PODSET_GROUP: Final = "kueue.x-k8s.io/podset-group-name"
# Kueue's AdmissionCheck API (kueue.x-k8s.io/v1beta2) and the controller name fabricfit answers
# for: a ClusterQueue whose admission checks include one with this ``spec.controllerName`` lets
# fabricfit plan each admitted Workload before Kueue starts it (placement.mode admission-check).
KUEUE_GROUP: Final = "kueue.x-k8s.io"
KUEUE_VERSION: Final = "v1beta2"
ADMISSION_CHECK_CONTROLLER: Final = "fabricfit.dev/placement"
#: What Kueue writes on a Workload it makes for one component of a job (a LeaderWorkerSet
#: group): the owner (its reference is not a controller reference), and the component's index.
KUEUE_JOB_OWNER_GVK_ANNOTATION: Final = "kueue.x-k8s.io/job-owner-gvk"
KUEUE_JOB_OWNER_NAME_ANNOTATION: Final = "kueue.x-k8s.io/job-owner-name"
KUEUE_COMPONENT_INDEX_ANNOTATION: Final = "kueue.x-k8s.io/component-workload-index"

# Index labels that carry a pod's rank-block index, per workload kind.
JOB_COMPLETION_INDEX_LABEL: Final = "batch.kubernetes.io/job-completion-index"
JOBSET_JOB_INDEX_LABEL: Final = "jobset.sigs.k8s.io/job-index"
KUBEFLOW_REPLICA_INDEX_LABEL: Final = "training.kubeflow.org/replica-index"
LWS_WORKER_INDEX_LABEL: Final = "leaderworkerset.sigs.k8s.io/worker-index"
# Labels that qualify the index labels above (which replicated job / replica type / group).
JOBSET_REPLICATED_JOB_LABEL: Final = "jobset.sigs.k8s.io/replicatedjob-name"
KUBEFLOW_REPLICA_TYPE_LABEL: Final = "training.kubeflow.org/replica-type"
LWS_GROUP_INDEX_LABEL: Final = "leaderworkerset.sigs.k8s.io/group-index"
# A StatefulSet pod's ordinal (the PodIndexLabel feature: beta and on since Kubernetes 1.28,
# GA in 1.32; k8s.io/api@v0.36.0 apps/v1/types.go:32).
STATEFULSET_POD_INDEX_LABEL: Final = "apps.kubernetes.io/pod-index"
# The index fabricfit gives a Deployment's pod when it pins it (a Deployment has none of its own).
POD_INDEX_LABEL: Final = "fabricfit.dev/pod-index"

DEFAULT_RANK_ORDER: Final = "tp-cp-ep-dp-pp"
