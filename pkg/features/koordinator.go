package features

import (
	"sort"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/component-base/featuregate"
)

// koordinatorOnly are Koordinator's feature gates (koord-manager's,
// koordlet's and koord-scheduler's, with Koordinator's defaults) that Koord
// does not implement. They are accepted under their own names, so that a
// Koordinator deployment's --feature-gates starts every Koord component; they
// change nothing, and NotImplemented names them (a log line at start and
// the koord_feature_gate_not_implemented metric).
var koordinatorOnly = map[featuregate.Feature]featuregate.FeatureSpec{
	// koord-manager: webhooks, quotas, colocation profiles.
	"ElasticMutatingWebhook":                    {Default: true, PreRelease: featuregate.Beta},
	"NodeMutatingWebhook":                       {Default: false, PreRelease: featuregate.Alpha},
	"NodeValidatingWebhook":                     {Default: false, PreRelease: featuregate.Alpha},
	"ReservationMutatingWebhook":                {Default: false, PreRelease: featuregate.Alpha},
	"WebhookFramework":                          {Default: true, PreRelease: featuregate.Beta},
	"ColocationProfileController":               {Default: false, PreRelease: featuregate.Alpha},
	"MultiQuotaTree":                            {Default: false, PreRelease: featuregate.Alpha},
	"ElasticQuotaIgnorePodOverhead":             {Default: false, PreRelease: featuregate.Alpha},
	"ElasticQuotaIgnoreTerminatingPod":          {Default: false, PreRelease: featuregate.Alpha},
	"ElasticQuotaImmediateIgnoreTerminatingPod": {Default: false, PreRelease: featuregate.Alpha},
	"ElasticQuotaGuaranteeUsage":                {Default: false, PreRelease: featuregate.Alpha},
	"ElasticQuotaEnableUpdateResourceKey":       {Default: false, PreRelease: featuregate.Alpha},
	"ElasticQuotaEvaluationTransformPod":        {Default: false, PreRelease: featuregate.Alpha},
	"DisableDefaultQuota":                       {Default: false, PreRelease: featuregate.Alpha},
	"SupportParentQuotaSubmitPod":               {Default: false, PreRelease: featuregate.Alpha},
	"EnableQuotaAdmission":                      {Default: false, PreRelease: featuregate.Alpha},
	"EnableQuotaAdmissionOnUpdate":              {Default: false, PreRelease: featuregate.Alpha},
	"EnablePodEnhancedValidator":                {Default: false, PreRelease: featuregate.Alpha},
	"EnableSyncGPUSharedResource":               {Default: false, PreRelease: featuregate.Alpha},
	"ValidatePodDeviceResource":                 {Default: false, PreRelease: featuregate.Alpha},
	"DisableExtendedResourceSpec":               {Default: false, PreRelease: featuregate.Alpha},
	"DisableDeviceResourceSpec":                 {Default: false, PreRelease: featuregate.Alpha},
	"BindingAdmissionWebhook":                   {Default: false, PreRelease: featuregate.Alpha},
	"DisablePVCReservation":                     {Default: false, PreRelease: featuregate.Beta},
	"PriorityTransformer":                       {Default: false, PreRelease: featuregate.Alpha},
	"PreemptionPolicyTransformer":               {Default: false, PreRelease: featuregate.Alpha},
	"ReplaceResourcesTransformer":               {Default: false, PreRelease: featuregate.Alpha},

	// koordlet.
	"AuditEvents":            {Default: false, PreRelease: featuregate.Alpha},
	"AuditEventsHTTPHandler": {Default: false, PreRelease: featuregate.Alpha},
	"BECPUManager":           {Default: false, PreRelease: featuregate.Alpha},
	"CPUEvict":               {Default: false, PreRelease: featuregate.Alpha},
	"MemoryEvict":            {Default: false, PreRelease: featuregate.Alpha},
	"CPUAllocatableEvict":    {Default: false, PreRelease: featuregate.Alpha},
	"MemoryAllocatableEvict": {Default: false, PreRelease: featuregate.Alpha},
	"SystemConfig":           {Default: false, PreRelease: featuregate.Alpha},
	"RdtResctrl":             {Default: true, PreRelease: featuregate.Beta},
	"ResctrlCollector":       {Default: false, PreRelease: featuregate.Alpha},
	"NodeTopologyReport":     {Default: true, PreRelease: featuregate.Beta},
	"Accelerators":           {Default: false, PreRelease: featuregate.Alpha},
	"RDMADevices":            {Default: false, PreRelease: featuregate.Alpha},
	"CPICollector":           {Default: false, PreRelease: featuregate.Alpha},
	"Libpfm4":                {Default: false, PreRelease: featuregate.Alpha},
	"PSICollector":           {Default: false, PreRelease: featuregate.Alpha},
	"BlkIOReconcile":         {Default: false, PreRelease: featuregate.Alpha},
	"ColdPageCollector":      {Default: false, PreRelease: featuregate.Alpha},
	"HugePageReport":         {Default: false, PreRelease: featuregate.Alpha},
	"PodResourcesProxy":      {Default: false, PreRelease: featuregate.Alpha},
	"HamiCoreVGPUMonitor":    {Default: false, PreRelease: featuregate.Alpha},
	"PerCPUMetric":           {Default: false, PreRelease: featuregate.Alpha},
	"NodeMetricPromMetrics":  {Default: false, PreRelease: featuregate.Alpha},

	// koord-scheduler.
	"CompatibleCSIStorageCapacity":             {Default: false, PreRelease: featuregate.Alpha},
	"DisableCSIStorageCapacityInformer":        {Default: false, PreRelease: featuregate.Alpha},
	"CompatiblePodDisruptionBudget":            {Default: false, PreRelease: featuregate.Alpha},
	"DisablePodDisruptionBudgetInformer":       {Default: false, PreRelease: featuregate.Alpha},
	"DisableDynamicResourceAllocationInformer": {Default: false, PreRelease: featuregate.Alpha},
	"ResizePod":                        {Default: false, PreRelease: featuregate.Alpha},
	"LazyReservationRestore":           {Default: false, PreRelease: featuregate.Alpha},
	"OmitNodeLabelsForReservation":     {Default: false, PreRelease: featuregate.Alpha},
	"SkipReservationFitsNode":          {Default: false, PreRelease: featuregate.Alpha},
	"DevicePluginAdaption":             {Default: false, PreRelease: featuregate.Alpha},
	"CleanExpiredReservationAllocated": {Default: false, PreRelease: featuregate.Alpha},
	"DynamicSchedulerCheck":            {Default: true, PreRelease: featuregate.Alpha},
	"CrossSchedulerNomination":         {Default: false, PreRelease: featuregate.Alpha},
	"SkipFilterWithNominatedPods":      {Default: false, PreRelease: featuregate.Alpha},
	"CSIStorageCapacity":               {Default: true, PreRelease: featuregate.GA},
	"GenericEphemeralVolume":           {Default: true, PreRelease: featuregate.GA},
	"PodDisruptionBudget":              {Default: true, PreRelease: featuregate.GA},
	"SyncBarrier":                      {Default: false, PreRelease: featuregate.Alpha},
	"GangPendingPodsConditionPatch":    {Default: true, PreRelease: featuregate.Beta},
	"EnableInlineBatchSchedule":        {Default: false, PreRelease: featuregate.Alpha},
	"EnableBatchScheduleNodeSnapshot":  {Default: true, PreRelease: featuregate.Beta},
}

// NotImplemented lists the Koordinator gates g knows that Koord does not
// act on, sorted, with whether each is on (by default or by the flag).
func NotImplemented(g featuregate.FeatureGate) (names []string, enabled map[string]bool) {
	enabled = map[string]bool{}
	for f := range koordinatorOnly {
		names = append(names, string(f))
		enabled[string(f)] = g.Enabled(f)
	}
	sort.Strings(names)
	return names, enabled
}

// ReportNotImplemented tells, once at start, which Koordinator gates were
// set away from their default: Koord accepted them but does nothing with
// them. It returns a collector of koord_feature_gate_not_implemented{gate},
// 1 for each such gate that is on and 0 for each that is off, for the
// component's metrics registry.
func ReportNotImplemented(logger logr.Logger, g featuregate.FeatureGate) prometheus.Collector {
	gauge := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "koord_feature_gate_not_implemented",
		Help: "Koordinator feature gates Koord accepts but does not implement, by gate: 1 when on, 0 when off.",
	}, []string{"gate"})
	names, enabled := NotImplemented(g)
	var changed []string
	for _, n := range names {
		v := 0.0
		if enabled[n] {
			v = 1
		}
		gauge.WithLabelValues(n).Set(v)
		if enabled[n] != koordinatorOnly[featuregate.Feature(n)].Default {
			changed = append(changed, n)
		}
	}
	if len(changed) > 0 {
		logger.Info("Koordinator feature gates set that Koord does not implement: accepted, no effect", "gates", changed)
	}
	return gauge
}

// Gates lists the gate names every Koord component accepts, sorted: the ones
// Koord implements, and Koordinator's that it accepts without acting on.
func Gates() (implemented, notImplemented []string) {
	for f := range defaults {
		implemented = append(implemented, string(f))
	}
	for f := range koordinatorOnly {
		notImplemented = append(notImplemented, string(f))
	}
	sort.Strings(implemented)
	sort.Strings(notImplemented)
	return implemented, notImplemented
}
