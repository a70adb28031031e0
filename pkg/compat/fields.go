// Package compat is the one list of what Koord does with each Koordinator
// field it accepts: the objects' fields Koord keeps but does not act on yet
// (reported when set, never refused) and the ones it treats differently.
// docs/compatibility.md is generated from it (go run ./hack/compatdoc), and
// a test fails when the two disagree.
package compat

import (
	"encoding/json"
	"strings"
)

// Support is what Koord does with a field.
type Support string

const (
	// Supported fields behave as in Koordinator.
	Supported Support = "supported"
	// NotActedOn fields are accepted and kept, and reported when set (an
	// Event on the object and the koord_*_unsupported_field metric).
	NotActedOn Support = "accepted, not acted on"
	// Differs: Koord acts on the field by a different rule (Note says how).
	Differs Support = "differs"
)

// Object names (the Object of a Field).
const (
	NodeSLO             = "NodeSLO"
	NodeMetric          = "NodeMetric"
	Reservation         = "Reservation"
	SLOControllerConfig = "slo-controller-config"
	// PodAnnotation entries name the annotation, then the field in its value.
	PodAnnotation = "Pod annotation"
	// NodeAnnotation entries name an annotation (or object) Koordinator's
	// components write on or for a node.
	NodeAnnotation = "Node annotation"
	// PodLabel entries name a label Koordinator reads on pods.
	PodLabel = "Pod label"
	// SchedulerPlugin entries name a Koordinator scheduler plugin.
	SchedulerPlugin = "Scheduler plugin"
	// Plugin args of koord-scheduler's profiles.
	LoadAwareArgs    = "LoadAwareSchedulingArgs"
	ReservationArgs  = "ReservationArgs"
	CoschedulingArgs = "CoschedulingArgs"
	ElasticQuotaArgs = "ElasticQuotaArgs"
	// koord-descheduler's objects and configuration.
	PodMigrationJob         = "PodMigrationJob"
	DeschedulerConfig       = "DeschedulerConfiguration"
	LowNodeLoadArgs         = "LowNodeLoadArgs"
	MigrationControllerArgs = "MigrationControllerArgs"
)

// Field is one entry: Path is the field's JSON path in the object, with *
// for any map key or list element; Value, when set, narrows the entry to that
// value of the field.
type Field struct {
	Object  string
	Path    string
	Value   string
	Support Support
	Note    string
}

var qosClasses = "resourceQOSStrategy.*."

// Fields lists every field that is not simply supported. A field of the
// objects' schemas that is not listed here is supported.
var Fields = []Field{
	// NodeSLO: what koordlet enforces.
	{NodeSLO, "spec.resourceUsedThresholdWithBE.memoryAllocatableEvictThresholdPercent", "", NotActedOn, "BE memory eviction is by node usage (memoryEvictThresholdPercent)"},
	{NodeSLO, "spec.resourceUsedThresholdWithBE.memoryAllocatableEvictLowerPercent", "", NotActedOn, ""},
	{NodeSLO, "spec.resourceUsedThresholdWithBE.cpuEvictThresholdPercent", "", NotActedOn, "BE CPU eviction is by BE satisfaction (cpuEvictBESatisfaction*)"},
	{NodeSLO, "spec.resourceUsedThresholdWithBE.cpuEvictLowerPercent", "", NotActedOn, ""},
	{NodeSLO, "spec.resourceUsedThresholdWithBE.cpuAllocatableEvictThresholdPercent", "", NotActedOn, ""},
	{NodeSLO, "spec.resourceUsedThresholdWithBE.cpuAllocatableEvictLowerPercent", "", NotActedOn, ""},
	{NodeSLO, "spec.resourceUsedThresholdWithBE.cpuEvictPolicy", "evictByAllocatable", NotActedOn, "BE CPU eviction measures satisfaction against the real limit (evictByRealLimit)"},
	{NodeSLO, "spec.resourceUsedThresholdWithBE.evictEnabledPriorityThreshold", "", NotActedOn, "only BE pods are evicted"},
	{NodeSLO, "spec.resourceUsedThresholdWithBE.allocatableEvictPriorityThreshold", "", NotActedOn, ""},
	{NodeSLO, "spec.resourceQOSStrategy.policies.cpuPolicy", "coreSched", NotActedOn, "koordlet uses group identity where the kernel has it, else cpu.idle"},
	{NodeSLO, "spec.resourceQOSStrategy.policies.netQOSPolicy", "", NotActedOn, ""},
	{NodeSLO, "spec." + qosClasses + "cpuQOS.coreExpeller", "", NotActedOn, "core scheduling is not used"},
	{NodeSLO, "spec." + qosClasses + "memoryQOS.wmarkRatio", "", NotActedOn, "async memory reclaim knobs exist only on Alibaba Cloud Linux"},
	{NodeSLO, "spec." + qosClasses + "memoryQOS.wmarkScalePermill", "", NotActedOn, ""},
	{NodeSLO, "spec." + qosClasses + "memoryQOS.wmarkMinAdj", "", NotActedOn, ""},
	{NodeSLO, "spec." + qosClasses + "memoryQOS.priorityEnable", "", NotActedOn, "memcg priority exists only on Alibaba Cloud Linux"},
	{NodeSLO, "spec." + qosClasses + "memoryQOS.priority", "", NotActedOn, ""},
	{NodeSLO, "spec." + qosClasses + "memoryQOS.oomKillGroup", "", NotActedOn, ""},
	{NodeSLO, "spec." + qosClasses + "memoryQOS.pageCacheEnable", "", NotActedOn, "page cache limits exist only on Alibaba Cloud Linux"},
	{NodeSLO, "spec." + qosClasses + "memoryQOS.pageCacheLimitPercent", "", NotActedOn, ""},
	{NodeSLO, "spec." + qosClasses + "memoryQOS.pageCacheLimitSize", "", NotActedOn, ""},
	{NodeSLO, "spec." + qosClasses + "memoryQOS.pageCacheReclaimSync", "", NotActedOn, ""},
	{NodeSLO, "spec." + qosClasses + "blkioQOS", "", NotActedOn, "block IO QoS is not implemented"},
	{NodeSLO, "spec." + qosClasses + "resctrlQOS", "", NotActedOn, "LLC and memory bandwidth partitioning (resctrl) is not implemented"},
	{NodeSLO, "spec." + qosClasses + "networkQOS", "", NotActedOn, "network QoS is not implemented"},
	{NodeSLO, "spec.resourceQOSStrategy.systemClass", "", NotActedOn, "system pods and host applications get no class-specific QoS"},
	{NodeSLO, "spec.systemStrategy", "", NotActedOn, "node-wide kernel knobs (min_free_kbytes, watermark_scale_factor, ...) are left as the node has them"},
	{NodeSLO, "spec.hostApplications", "", NotActedOn, "applications outside pods are not managed"},

	// NodeMetric: what koordlet reports; koord-manager and koord-scheduler read it.
	{NodeMetric, "spec.metricCollectPolicy.nodeMemoryCollectPolicy", "usageWithHotPageCache", NotActedOn, "memory usage is reported without page cache"},
	{NodeMetric, "spec.metricCollectPolicy.nodeMemoryCollectPolicy", "usageWithPageCache", NotActedOn, "memory usage is reported without page cache"},
	{NodeMetric, "status.nodeMetric.aggregatedSystemUsages", "", NotActedOn, "batch resources use the latest system usage"},
	{NodeMetric, "status.nodeMetric.numaUsages.*.systemUsage", "", NotActedOn, "batch resources are computed per node, not per NUMA node"},
	{NodeMetric, "status.prodPeakMetric", "", NotActedOn, ""},
	{NodeMetric, "status.podsMetric.*.podUsage", "", Differs,
		"a figure below zero or beyond the node's capacity is no measurement: the pod counts at its request; nodeUsage or systemUsage like that makes the node offer no batch or mid capacity (Koordinator computes with them)"},

	// Reservation: who may consume it.
	{Reservation, "spec.owners.*.labelSelector", "", Differs,
		"owners found by labels (or by a controller's name without namespace or UID) are pods of the template's namespace, default when it names none; annotate the Reservation koord.sh/reservation-owners-any-namespace=true for Koordinator's every-namespace match"},

	// Annotations and labels Koord acts on by a rule of its own.
	{PodAnnotation, "scheduling.koordinator.sh/resource-spec.preferredCPUBindPolicy", "SpreadByPCPUs", Differs,
		"with numaScoringStrategy MostAllocated, a NUMA node where the pod gets one thread of each core comes before a fuller one where it would get both threads of a core"},
	{PodAnnotation, "scheduling.koordinator.sh/numa-topology-spec.singleNUMANodeExclusive", "", NotActedOn,
		"single- and multi-NUMA pods may share a NUMA node"},
	{PodAnnotation, "scheduling.koordinator.sh/resource-spec.preferredCPUBindPolicy", "FullPCPUs", Differs,
		"never falls back to half cores: a pod that cannot have whole cores stays pending"},
	{PodLabel, "koordinator.sh/qosClass", "", Differs,
		"koordlet treats a pod that asks for kubernetes.io/batch-* as BE whatever the label says (batch limits, BE CPU suppression and priority, eviction); admission policy koord-qos-class refuses such a pod labelled otherwise, and a change of the label once the pod is placed"},
	{PodLabel, "quota.scheduling.koordinator.sh/preemptible", "false", Differs,
		"the pod must fit in its quota's min for every resource the quota's max names (a resource the min does not name has a min of 0), not only those the min names; once the pod is placed the label cannot change (admission policy koord-quota-labels)"},

	// Node annotations and labels Koordinator's own components write.
	{NodeAnnotation, "node.koordinator.sh/resource-amplification-ratio", "", NotActedOn,
		"Koord does not amplify allocatable; on a node Koordinator amplified, LoadAwareScheduling uses raw-allocatable, NodeNUMAResource does not scale cpuset pods"},
	{NodeAnnotation, "node.koordinator.sh/be-cpu-shared-pools", "", NotActedOn, "koordlet works out BE CPUs itself (BE CPU suppression)"},
	{NodeAnnotation, "NodeResourceTopology topology.node.k8s.io/v1alpha1", "", Supported,
		"what Koordinator's koordlet writes: the shipped CRD serves v1alpha1 beside v1alpha2, which koord-scheduler reads"},

	// koord-scheduler's plugin args (KubeSchedulerConfiguration pluginConfig).
	{LoadAwareArgs, "estimator", "", Supported, "only Koordinator's default estimator exists; another name is an error"},
	{LoadAwareArgs, "supportedResources", "", NotActedOn, "the resources tracked are those the weights and thresholds name"},
	{LoadAwareArgs, "scoringStrategy", "MostUsed", Differs, "Koord can pack by measured usage; Koordinator only spreads"},
	{ReservationArgs, "enablePreemption", "", NotActedOn, "reservations do not preempt"},
	{ReservationArgs, "minCandidateNodesPercentage", "", NotActedOn, ""},
	{ReservationArgs, "minCandidateNodesAbsolute", "", NotActedOn, ""},
	{ReservationArgs, "controllerWorkers", "", NotActedOn, ""},
	{ReservationArgs, "gcDurationSeconds", "", NotActedOn, "koord-manager collects finished reservations (--reservation-gc-after)"},
	{ReservationArgs, "gcIntervalSeconds", "", NotActedOn, ""},
	{ReservationArgs, "disableGarbageCollection", "", NotActedOn, ""},
	{ReservationArgs, "resyncIntervalSeconds", "", NotActedOn, ""},
	{ReservationArgs, "preAllocationConfig", "", NotActedOn, ""},
	{ReservationArgs, "ignoredResources", "", NotActedOn, ""},
	{ReservationArgs, "ignoredResourceGroups", "", NotActedOn, ""},
	{ReservationArgs, "reservationSelectorIndex", "", NotActedOn, ""},

	{CoschedulingArgs, "controllerWorkers", "", NotActedOn, "koord-manager keeps PodGroup status; a value other than 1 is reported"},
	{CoschedulingArgs, "skipCheckScheduleCycle", "", NotActedOn, ""},
	{CoschedulingArgs, "enablePreemption", "", NotActedOn, "gangs do not preempt as a whole"},
	{CoschedulingArgs, "awareNetworkTopology", "", NotActedOn, ""},

	{ElasticQuotaArgs, "defaultQuotaGroupMax", "", NotActedOn, "pods in no quota stay outside the tree (no default group); they are not checked, and what they hold is taken from what the quotas share"},
	{ElasticQuotaArgs, "systemQuotaGroupMax", "", NotActedOn, "no system group"},
	{ElasticQuotaArgs, "quotaGroupNamespace", "", NotActedOn, "reported when not koordinator-system"},
	{ElasticQuotaArgs, "monitorAllQuotas", "", NotActedOn, "borrowed capacity comes back by preemption when the lender's pods ask for it, not by a revoking loop"},
	{ElasticQuotaArgs, "delayEvictTime", "", NotActedOn, "reported when not 120s"},
	{ElasticQuotaArgs, "revokePodInterval", "", NotActedOn, "reported when not 1s"},
	{ElasticQuotaArgs, "enableMinQuotaScale", "", NotActedOn, "mins that pass what the tree shares are always scaled down in proportion"},
	{ElasticQuotaArgs, "disableDefaultQuotaPreemption", "", NotActedOn, ""},
	{ElasticQuotaArgs, "enableQueueHint", "", NotActedOn, ""},
	{ElasticQuotaArgs, "quotaSnapshotUpdateInterval", "", NotActedOn, ""},
	{ElasticQuotaArgs, "hookPlugins", "", NotActedOn, ""},

	// Koordinator's scheduler plugins Koord does not have: a profile that
	// enables them loads, without them (koord_scheduler_plugin_not_implemented).
	{SchedulerPlugin, "DeviceShare", "", NotActedOn, "GPU and RDMA device sharing"},
	{SchedulerPlugin, "DefaultPreBind", "", NotActedOn, "kube-scheduler's own pre-bind applies"},
	{SchedulerPlugin, "NodeResourcesFitPlus", "", NotActedOn, ""},
	{SchedulerPlugin, "ScarceResourceAvoidance", "", NotActedOn, ""},
	{SchedulerPlugin, "SchedulingHint", "", NotActedOn, ""},
	{SchedulerPlugin, "Reservation at postFilter", "", NotActedOn, "reservations do not preempt"},

	// Reservation: what koord-scheduler places and keeps.
	{Reservation, "spec.preAllocation", "", NotActedOn, "a reservation is placed only on free resources, never on what running pods hold"},
	{Reservation, "spec.preAllocationPolicy", "", NotActedOn, ""},

	// PodMigrationJob and koord-descheduler's configuration (reported at
	// start, as "Configuration field accepted, not acted on").
	{PodMigrationJob, "spec.reservationOptions.preemptionOptions", "", NotActedOn, "a migration never preempts pods to make room"},
	{DeschedulerConfig, "enableProfiling", "", NotActedOn, "no pprof endpoint"},
	{DeschedulerConfig, "enableContentionProfiling", "", NotActedOn, ""},
	{DeschedulerConfig, "healthzBindAddress", "", Differs, "koord-descheduler's --health-addr"},
	{DeschedulerConfig, "metricsBindAddress", "", Differs, "koord-descheduler's --metrics-addr"},
	{DeschedulerConfig, "maxNoOfPodsToEvictPerNamespace", "", Differs, "MigrationController's maxMigratingPerNamespace bounds the jobs"},
	{DeschedulerConfig, "profiles.*.plugins.deschedule", "", NotActedOn, "Koord runs LowNodeLoad at balance and MigrationController as the evictor; other plugins are reported"},
	{LowNodeLoadArgs, "prodHighThresholds", "", NotActedOn, "the thresholds are on node usage"},
	{LowNodeLoadArgs, "prodLowThresholds", "", NotActedOn, ""},
	{LowNodeLoadArgs, "anomalyCondition.timeout", "", NotActedOn, "a node stays hot until consecutiveNormalities rounds under the mark"},
	{MigrationControllerArgs, "nodeFit", "", NotActedOn, "LowNodeLoad's nodeFit decides"},
	{MigrationControllerArgs, "nodeSelector", "", NotActedOn, ""},
	{MigrationControllerArgs, "arbitrationArgs", "", NotActedOn, "jobs are admitted one by one against the limits, without batching"},
	{MigrationControllerArgs, "evictAllBarePods", "", NotActedOn, "bare pods (no controller) are never moved"},

	// slo-controller-config: koord-manager's ConfigMap, per key.
	{SLOControllerConfig, "colocation-config.metricMemoryCollectPolicy", "usageWithHotPageCache", NotActedOn, "memory usage is reported without page cache"},
	{SLOControllerConfig, "colocation-config.metricMemoryCollectPolicy", "usageWithPageCache", NotActedOn, "memory usage is reported without page cache"},
	{SLOControllerConfig, "colocation-config.cpuCalculatePolicy", "request", Supported, "batch CPU is computed by usage, as Koordinator does for this value"},
	{SLOControllerConfig, "colocation-config.extensions", "", NotActedOn, "third-party extensions are kept"},
	{SLOControllerConfig, "colocation-config.nodeConfigs.*.extensions", "", NotActedOn, ""},
	{SLOControllerConfig, "host-application-config", "", NotActedOn, "applications outside pods are not managed"},
	{SLOControllerConfig, "cpu-normalization-config", "", NotActedOn, "batch-cpu is not scaled by CPU model"},
	{SLOControllerConfig, "resource-amplification-config", "", NotActedOn, "node allocatable is not amplified"},
}

// NotActedOnIn lists the entries of object that obj sets (as "path" or
// "path=value"), in the order of Fields. obj is the object itself or its
// JSON form ([]byte or json.RawMessage).
func NotActedOnIn(object string, obj any) []string {
	var tree any
	var raw []byte
	switch v := obj.(type) {
	case []byte:
		raw = v
	case json.RawMessage:
		raw = v
	default:
		var err error
		if raw, err = json.Marshal(obj); err != nil {
			return nil
		}
	}
	if json.Unmarshal(raw, &tree) != nil {
		return nil
	}
	var out []string
	for _, f := range Fields {
		if f.Object != object || f.Support != NotActedOn {
			continue
		}
		if set(tree, strings.Split(f.Path, "."), f.Value) {
			out = append(out, f.Name())
		}
	}
	return out
}

// Name is how reports and the metric name the entry.
func (f Field) Name() string {
	if f.Value != "" {
		return f.Path + "=" + f.Value
	}
	return f.Path
}

// set says whether the path is present (not null) in tree, and equal to
// value when that is given.
func set(tree any, path []string, value string) bool {
	if len(path) == 0 {
		// An empty object or list sets nothing ("systemStrategy: {}").
		switch t := tree.(type) {
		case nil:
			return false
		case map[string]any:
			if len(t) == 0 {
				return false
			}
		case []any:
			if len(t) == 0 {
				return false
			}
		}
		if value == "" {
			return true
		}
		s, ok := tree.(string)
		return ok && s == value
	}
	switch t := tree.(type) {
	case map[string]any:
		if path[0] == "*" {
			for _, v := range t {
				if set(v, path[1:], value) {
					return true
				}
			}
			return false
		}
		v, ok := t[path[0]]
		return ok && set(v, path[1:], value)
	case []any:
		if path[0] != "*" {
			return false
		}
		for _, v := range t {
			if set(v, path[1:], value) {
				return true
			}
		}
	}
	return false
}
