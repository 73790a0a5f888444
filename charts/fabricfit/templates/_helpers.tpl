{{/* Chart name, truncated to the 63 characters DNS names allow. */}}
{{- define "fabricfit.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Fully qualified app name: the release name, with the chart name unless it is included. */}}
{{- define "fabricfit.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Chart name and version, for the helm.sh/chart label. */}}
{{- define "fabricfit.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of every object. */}}
{{- define "fabricfit.labels" -}}
helm.sh/chart: {{ include "fabricfit.chart" . }}
{{ include "fabricfit.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: fabricfit
{{- end }}

{{/* Labels that select the operator pod. */}}
{{- define "fabricfit.selectorLabels" -}}
app.kubernetes.io/name: {{ include "fabricfit.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The name of the service account to use. */}}
{{- define "fabricfit.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "fabricfit.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The operator image reference (tag defaults to the chart's appVersion). */}}
{{- define "fabricfit.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* Namespace of the monitoring objects (ServiceMonitor, PrometheusRule, dashboard). */}}
{{- define "fabricfit.monitoringNamespace" -}}
{{- default .Release.Namespace .namespace }}
{{- end }}

{{/*
RBAC rules on the namespaced resources the operator watches and changes: exactly the verbs the
code uses. The comment above each rule says why; it is rendered into the manifests and the docs'
RBAC reference is generated from it.
*/}}
{{- define "fabricfit.namespacedRules" -}}
# kopf lists and watches TrainingTopologies and patches them (finalizer, progress annotations);
# the operator reads one when a gated pod of its workload appears.
- apiGroups: ["fabricfit.dev"]
  resources: ["trainingtopologies"]
  verbs: ["get", "list", "watch", "patch"]
# The plan, the prediction and the conditions.
- apiGroups: ["fabricfit.dev"]
  resources: ["trainingtopologies/status"]
  verbs: ["patch"]
# Pods: watched to count the GPUs they hold, and patched to pin (node affinity), label and
# ungate the workload's pods; a pinned pod kube-scheduler calls Unschedulable (something else
# took its node's GPUs) is read again and deleted, unbound, so its controller recreates it gated.
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["get", "list", "watch", "patch", "delete"]
# Workloads: read, then patched while suspended (scheduling gate, labels, Kueue annotations,
# affinities) and unsuspended; one rule per registered workload kind (files/workload-rules.yaml,
# generated from the workload-kind registry by `make crd`).
{{ .Files.Get "files/workload-rules.yaml" }}
# NVIDIA's DRA driver: the ComputeDomain of a job whose groups span GB200 trays of one NVLink
# domain, created before the workload is released and deleted with the TrainingTopology
# (harmless where its CRD is absent).
- apiGroups: ["resource.nvidia.com"]
  resources: ["computedomains"]
  verbs: ["get", "create", "delete"]
# The ResourceClaimTemplates the workload's pods claim GPUs through (gpusPerPod from the claim).
- apiGroups: ["resource.k8s.io"]
  resources: ["resourceclaimtemplates"]
  verbs: ["get"]
# kopf and the operator post Events on TrainingTopologies.
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create"]
# Kueue AdmissionCheck controller (placement.mode admission-check): each job's Workload, and
# fabricfit's entry of its status.admissionChecks.
- apiGroups: ["kueue.x-k8s.io"]
  resources: ["workloads"]
  verbs: ["list", "watch"]
- apiGroups: ["kueue.x-k8s.io"]
  resources: ["workloads/status"]
  verbs: ["patch"]
{{- end }}

{{/* Cluster-scoped Kueue objects the AdmissionCheck controller reads (and its checks' Active
condition): granted by the ClusterRole in every mode. */}}
{{- define "fabricfit.kueueClusterRules" -}}
# Kueue AdmissionCheck controller: the AdmissionChecks naming fabricfit.dev/placement, and
# their Active condition.
- apiGroups: ["kueue.x-k8s.io"]
  resources: ["admissionchecks"]
  verbs: ["list", "watch"]
- apiGroups: ["kueue.x-k8s.io"]
  resources: ["admissionchecks/status"]
  verbs: ["patch"]
# The ResourceFlavors whose nodes a job is planned on once Kueue has reserved quota.
- apiGroups: ["kueue.x-k8s.io"]
  resources: ["resourceflavors"]
  verbs: ["list", "watch"]
{{- end }}

{{/* Operator replicas: the value, else 2 with peering (a standby), else 1. */}}
{{- define "fabricfit.replicas" -}}
{{- if kindIs "invalid" .Values.replicas }}
{{- ternary 2 1 .Values.peering.enabled }}
{{- else }}
{{- .Values.replicas }}
{{- end }}
{{- end }}

{{/* An alert's runbook: a page of the docs site under docsUrl (docs/operations/runbooks/NAME.md).
Call as: include "fabricfit.runbookUrl" (list $ "NAME"). */}}
{{- define "fabricfit.runbookUrl" -}}
{{- $root := index . 0 }}
{{- printf "%soperations/runbooks/%s/" $root.Values.docsUrl (index . 1) }}
{{- end }}
