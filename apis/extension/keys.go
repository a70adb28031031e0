package extension

// Domains of Koordinator-compatible keys.
const (
	DomainPrefix           = "koordinator.sh/"
	SchedulingDomainPrefix = "scheduling.koordinator.sh/"
	NodeDomainPrefix       = "node.koordinator.sh/"
	TopologyDomainPrefix   = "topology.koordinator.sh/"
)

// Pod labels.
const (
	// LabelPodQoS is the Koordinator QoS class of a pod (LSE, LSR, LS, BE, SYSTEM).
	LabelPodQoS = DomainPrefix + "qosClass"
	// LabelReservationIgnored set to "true" keeps a pod from consuming any reservation.
	LabelReservationIgnored = SchedulingDomainPrefix + "reservation-ignored"
	// LabelPodPriority is a pod's sub-priority within its band (an integer).
	LabelPodPriority = DomainPrefix + "priority"
	// LabelPodPriorityClass names a pod's band (koord-prod, koord-mid,
	// koord-batch, koord-free) in place of its spec.priority.
	LabelPodPriorityClass = DomainPrefix + "priority-class"
)

// Pod annotations.
const (
	// AnnotationResourceSpec asks for a CPU bind and exclusivity policy.
	AnnotationResourceSpec = SchedulingDomainPrefix + "resource-spec"
	// AnnotationNUMATopologySpec asks for a NUMA placement policy.
	AnnotationNUMATopologySpec = SchedulingDomainPrefix + "numa-topology-spec"
	// AnnotationResourceStatus is the cpuset and NUMA resources the scheduler chose (written at PreBind).
	AnnotationResourceStatus = SchedulingDomainPrefix + "resource-status"
	// AnnotationReservationAffinity restricts which reservations a pod may use.
	AnnotationReservationAffinity = SchedulingDomainPrefix + "reservation-affinity"
	// AnnotationReservationAllocated names the reservation a pod consumed (written by the scheduler).
	AnnotationReservationAllocated = SchedulingDomainPrefix + "reservation-allocated"
)

// ClusterColocationProfile annotations.
const (
	// AnnotationSkipUpdateResources on a profile keeps the webhook from
	// moving the cpu and memory of the pods it selects to batch or mid
	// resources (whatever its value).
	AnnotationSkipUpdateResources = "config.koordinator.sh/skip-update-resources"
)

// Node labels and annotations.
const (
	// AnnotationCustomUsageThresholds overrides LoadAwareScheduling thresholds for one node.
	AnnotationCustomUsageThresholds = SchedulingDomainPrefix + "usage-thresholds"
	// AnnotationCustomEstimatedScalingFactors is a pod's own
	// LoadAwareScheduling scaling factors ({"cpu": 60}), honoured only when
	// the plugin's allowCustomizeEstimation is on.
	AnnotationCustomEstimatedScalingFactors = SchedulingDomainPrefix + "load-estimated-scaling-factors"
	// AnnotationCustomEstimatedSecondsAfterPodScheduled is how long after
	// it was scheduled a pod counts at its estimate even when measured
	// (also only with allowCustomizeEstimation).
	AnnotationCustomEstimatedSecondsAfterPodScheduled = SchedulingDomainPrefix + "load-estimated-seconds-after-pod-scheduled"
	// AnnotationNodeRawAllocatable is the node's allocatable before
	// Koordinator's resource amplification ({"cpu": "32", "memory": "64Gi"}):
	// LoadAwareScheduling measures usage against it, as Koordinator does.
	AnnotationNodeRawAllocatable = NodeDomainPrefix + "raw-allocatable"
	// AnnotationNodeColocationStrategy is a node's own colocation-config
	// fields ({"cpuReclaimThresholdPercent": 70}), laid over the ConfigMap's.
	AnnotationNodeColocationStrategy = NodeDomainPrefix + "colocation-strategy"
	// LabelCPUReclaimRatio and the three labels after it set one field of the
	// node's colocation strategy, as a ratio ("0.7" is 70 %).
	LabelCPUReclaimRatio              = NodeDomainPrefix + "cpu-reclaim-ratio"
	LabelMemoryReclaimRatio           = NodeDomainPrefix + "memory-reclaim-ratio"
	LabelMidStaticCPUReservedRatio    = NodeDomainPrefix + "mid-static-cpu-reserved-ratio"
	LabelMidStaticMemoryReservedRatio = NodeDomainPrefix + "mid-static-memory-reserved-ratio"
	// LabelNodeCPUBindPolicy makes every integer-CPU pod on the node bind CPUs.
	LabelNodeCPUBindPolicy = NodeDomainPrefix + "cpu-bind-policy"
	// LabelNodeNUMAAllocateStrategy overrides NodeNUMAResource's
	// numaScoringStrategy for the node (MostAllocated or LeastAllocated).
	LabelNodeNUMAAllocateStrategy = NodeDomainPrefix + "numa-allocate-strategy"
	// LabelNodeNUMATopologyPolicy is the node's NUMA placement policy.
	LabelNodeNUMATopologyPolicy = NodeDomainPrefix + "numa-topology-policy"
)

// Batch (over-committed) extended resources on Node allocatable and BE pod requests.
const (
	// BatchCPU is in milli-cores.
	BatchCPU = "kubernetes.io/batch-cpu"
	// BatchMemory is in bytes.
	BatchMemory = "kubernetes.io/batch-memory"
	// MidCPU is in milli-cores: what prod pods requested but are predicted
	// not to use, offered to koord-mid pods.
	MidCPU = "kubernetes.io/mid-cpu"
	// MidMemory is in bytes.
	MidMemory = "kubernetes.io/mid-memory"
)

// The koordlet numa-info ConfigMap: kube-system/<node>-numa-info.
const (
	NUMAInfoNamespace           = "kube-system"
	NUMAInfoSuffix              = "-numa-info"
	LabelManagedBy              = "app.kubernetes.io/managed-by"
	ManagedByKoordlet           = "koordlet"
	LabelTopologyNode           = TopologyDomainPrefix + "node"
	NUMAInfoKeyCPUTopology      = "cpu-topology"
	NUMAInfoKeyNUMANodes        = "numa-nodes"
	NUMAInfoKeyCPUBasicInfo     = "cpu-basic-info"
	NUMAInfoKeyCPUManagerPolicy = "cpu-manager-policy"
	NUMAInfoKeyPodCPUAllocs     = "pod-cpu-allocs"
	NUMAInfoKeyCPUSharedPools   = "cpu-shared-pools"
)

// NUMAInfoConfigMapName is the name of a node's numa-info ConfigMap.
func NUMAInfoConfigMapName(nodeName string) string { return nodeName + NUMAInfoSuffix }
