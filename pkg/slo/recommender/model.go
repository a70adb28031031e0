// Package recommender is koord-manager's resource recommender: it learns
// each workload's containers' CPU and memory needs from the usage koordlet
// reports in NodeMetric and writes them to Recommendation status.
//
// The statistics are the Vertical Pod Autoscaler's, used as a library
// (k8s.io/autoscaler/vertical-pod-autoscaler/pkg/recommender/{model,logic}):
// decaying histograms of CPU samples and of each container's daily memory
// peaks, percentiles with a safety margin, confidence-scaled bounds and OOM
// bumps. This file holds that state, free of the API; controller.go feeds it
// and writes it out.
package recommender

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	vpatypes "k8s.io/autoscaler/vertical-pod-autoscaler/pkg/apis/autoscaling.k8s.io/v1"
	"k8s.io/autoscaler/vertical-pod-autoscaler/pkg/recommender/logic"
	vpamodel "k8s.io/autoscaler/vertical-pod-autoscaler/pkg/recommender/model"

	analysisv1alpha1 "github.com/koord-project/koord/apis/analysis/v1alpha1"
)

// Config tunes the recommender; Defaults are VPA's, except the CPU target
// (p95 rather than p90) and the memory target (p95 of the daily peaks).
type Config struct {
	// HalfLife is how long a sample takes to lose half its weight.
	HalfLife time.Duration
	// CPUPercentile and MemoryPercentile place the target in the CPU samples
	// and in the daily memory peaks.
	CPUPercentile, MemoryPercentile float64
	// SafetyMargin is added to the target and the bounds (0.15 is 15 %).
	SafetyMargin float64
	// MinSamples and WarmUp: no recommendation before a container has this
	// many CPU samples spanning this long.
	MinSamples int
	WarmUp     time.Duration
	// OOMBumpRatio and OOMMinBump: after an OOM kill, memory is sampled at
	// the larger of the memory at the kill times the ratio and that plus the
	// minimum bump.
	OOMBumpRatio float64
	OOMMinBump   int64
	// PodMinCPUMillis and PodMinMemoryMiB are the least a pod is
	// recommended, shared between its containers.
	PodMinCPUMillis, PodMinMemoryMiB float64
}

// Defaults returns the recommender's default configuration.
func Defaults() Config {
	return Config{
		HalfLife: 24 * time.Hour, CPUPercentile: 0.95, MemoryPercentile: 0.95, SafetyMargin: 0.15,
		MinSamples: 30, WarmUp: time.Hour, OOMBumpRatio: vpamodel.DefaultOOMBumpUpRatio, OOMMinBump: 100 << 20,
		PodMinCPUMillis: 25, PodMinMemoryMiB: 250,
	}
}

// Validate names the first setting out of range.
func (c Config) Validate() error {
	switch {
	case c.HalfLife <= 0:
		return fmt.Errorf("--recommender-half-life %v: must be positive", c.HalfLife)
	case c.CPUPercentile <= 0 || c.CPUPercentile > 1:
		return fmt.Errorf("--recommender-cpu-percentile %v: must be in (0, 1]", c.CPUPercentile)
	case c.MemoryPercentile <= 0 || c.MemoryPercentile > 1:
		return fmt.Errorf("--recommender-memory-percentile %v: must be in (0, 1]", c.MemoryPercentile)
	case c.SafetyMargin < 0:
		return fmt.Errorf("--recommender-safety-margin %v: must not be negative", c.SafetyMargin)
	case c.MinSamples < 1:
		return fmt.Errorf("--recommender-min-samples %d: must be at least 1", c.MinSamples)
	case c.WarmUp < 0:
		return fmt.Errorf("--recommender-warm-up %v: must not be negative", c.WarmUp)
	case c.OOMBumpRatio < 1:
		return fmt.Errorf("recommender OOM bump ratio %v: must be at least 1", c.OOMBumpRatio)
	}
	return nil
}

// initVPA sets VPA's process-wide aggregation settings once: the library
// reads them from a package variable.
var initVPA sync.Once

// Model holds, for each Recommendation, one aggregate per container name and
// one state per running container. Its memory is bounded: two fixed-size
// histograms per aggregate (about 3 KB) and a few words per container; a
// container is forgotten when its pod goes, an aggregate with its
// Recommendation.
type Model struct {
	cfg         Config
	recommender logic.PodResourceRecommender

	mu      sync.Mutex
	targets map[types.NamespacedName]*target
	// byPod finds a pod's container states without walking every target
	// (pods come and go far more often than Recommendations).
	byPod map[types.UID][]podEntry
	// How many aggregates and container states there are, kept as they
	// change: the metric reads them every recompute.
	aggregates, containers int
}

type podEntry struct {
	t *target
	k containerKey
}

type target struct {
	aggregates map[string]*vpamodel.AggregateContainerState
	containers map[containerKey]*vpamodel.ContainerState
	// requests of each container name in the newest pod sampled, kept as
	// numbers: a ResourceList per workload would be a tenth of the model.
	requests    map[string]requested
	newestPodAt time.Time
	// gone: Forget dropped it (byPod may still point at it).
	gone bool
	// restoredUntil is each checkpoint's last sample: a restarted manager
	// reads the latest NodeMetrics again, and what they hold is already in
	// the checkpoint.
	restoredUntil map[string]time.Time
}

// requested is a container's CPU (millicores) and memory (bytes) requests;
// -1 when it requests none.
type requested struct{ cpu, memory int64 }

func requestsOf(l corev1.ResourceList) requested {
	r := requested{-1, -1}
	if q, ok := l[corev1.ResourceCPU]; ok {
		r.cpu = q.MilliValue()
	}
	if q, ok := l[corev1.ResourceMemory]; ok {
		r.memory = q.Value()
	}
	return r
}

type containerKey struct {
	pod  types.UID
	name string
}

// NewModel makes an empty model. The first Config given wins for the
// process: VPA keeps its aggregation settings in a package variable.
func NewModel(cfg Config) *Model {
	initVPA.Do(func() {
		vpamodel.InitializeAggregationsConfig(vpamodel.NewAggregationsConfig(
			vpamodel.DefaultMemoryAggregationInterval, vpamodel.DefaultMemoryAggregationIntervalCount,
			cfg.HalfLife, cfg.HalfLife, cfg.OOMBumpRatio, float64(cfg.OOMMinBump)))
	})
	// VPA's confidence interval for the bounds is a day: a day of history
	// doubles the upper bound, a week adds 14 %.
	return &Model{cfg: cfg, targets: map[types.NamespacedName]*target{}, byPod: map[types.UID][]podEntry{}, recommender: logic.CreatePodResourceRecommender(logic.RecommendationConfig{
		SafetyMarginFraction: cfg.SafetyMargin, PodMinCPUMillicores: cfg.PodMinCPUMillis, PodMinMemoryMb: cfg.PodMinMemoryMiB,
		TargetCPUPercentile: cfg.CPUPercentile, LowerBoundCPUPercentile: 0.5, UpperBoundCPUPercentile: 0.95, ConfidenceIntervalCPU: 24 * time.Hour,
		TargetMemoryPercentile: cfg.MemoryPercentile, LowerBoundMemoryPercentile: 0.5, UpperBoundMemoryPercentile: 0.95, ConfidenceIntervalMemory: 24 * time.Hour,
	})}
}

// Track starts tracking a Recommendation, from its checkpoints; tracking
// one already tracked does nothing. A checkpoint that does not load is
// skipped and returned as an error: that container starts afresh.
func (m *Model) Track(rec types.NamespacedName, checkpoints []analysisv1alpha1.ContainerCheckpoint) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.targets[rec] != nil {
		return nil
	}
	t := &target{aggregates: map[string]*vpamodel.AggregateContainerState{}, containers: map[containerKey]*vpamodel.ContainerState{},
		requests: map[string]requested{}}
	m.targets[rec] = t
	var errs []error
	for _, cp := range checkpoints {
		a := vpamodel.NewAggregateContainerState()
		vcp, err := fromCheckpoint(cp)
		if err == nil {
			err = a.LoadFromCheckpoint(vcp)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("checkpoint of container %q: %w", cp.ContainerName, err))
			continue
		}
		t.aggregates[cp.ContainerName] = a
		m.aggregates++
		if t.restoredUntil == nil {
			t.restoredUntil = map[string]time.Time{}
		}
		t.restoredUntil[cp.ContainerName] = a.LastSampleStart
	}
	if len(errs) > 0 {
		return fmt.Errorf("%v", errs)
	}
	return nil
}

// Tracked reports whether a Recommendation is tracked.
func (m *Model) Tracked(rec types.NamespacedName) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.targets[rec] != nil
}

// Forget drops a Recommendation's state.
func (m *Model) Forget(rec types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t := m.targets[rec]; t != nil {
		t.gone = true
		m.aggregates -= len(t.aggregates)
		m.containers -= len(t.containers)
		delete(m.targets, rec)
	}
}

// ForgetPod drops a pod's containers from every Recommendation (their
// samples stay in the aggregates).
func (m *Model) ForgetPod(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range m.byPod[uid] {
		if _, ok := e.t.containers[e.k]; ok && !e.t.gone {
			delete(e.t.containers, e.k)
			m.containers--
		}
	}
	delete(m.byPod, uid)
}

// Sample is one container's usage over an interval starting at Start.
type Sample struct {
	Pod       types.UID
	PodAt     time.Time // the pod's creation, to tell the newest pod
	Container string
	Requests  corev1.ResourceList
	Start     time.Time
	CPU       float64 // cores
	Memory    float64 // bytes
}

// Add records a sample for a tracked Recommendation; it reports whether
// the CPU sample was taken (a sample older than the container's last, or
// than the checkpoint it was restored from, is not).
func (m *Model) Add(rec types.NamespacedName, s Sample) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.targets[rec]
	if t == nil || !s.Start.After(t.restoredUntil[s.Container]) {
		return false
	}
	c := m.container(t, s.Pod, s.Container, s.Requests)
	if !s.PodAt.Before(t.newestPodAt) {
		t.newestPodAt = s.PodAt
		t.requests[s.Container] = requestsOf(s.Requests)
	}
	ok := c.AddSample(&vpamodel.ContainerUsageSample{MeasureStart: s.Start, Usage: vpamodel.CPUAmountFromCores(s.CPU), Resource: vpamodel.ResourceCPU})
	c.AddSample(&vpamodel.ContainerUsageSample{MeasureStart: s.Start, Usage: vpamodel.MemoryAmountFromBytes(s.Memory), Resource: vpamodel.ResourceMemory})
	return ok
}

// OOM records that a container was OOM-killed at at, holding memory bytes
// (its limit, or its request without one).
func (m *Model) OOM(rec types.NamespacedName, pod types.UID, container string, requests corev1.ResourceList, at time.Time, memory float64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.targets[rec]
	if t == nil {
		return fmt.Errorf("recommendation %s is not tracked", rec)
	}
	return m.container(t, pod, container, requests).RecordOOM(at, vpamodel.MemoryAmountFromBytes(memory))
}

// container is a pod's container's state in t, made on first use. Caller
// holds m.mu.
func (m *Model) container(t *target, pod types.UID, name string, requests corev1.ResourceList) *vpamodel.ContainerState {
	k := containerKey{pod, name}
	c := t.containers[k]
	if c == nil {
		a := t.aggregates[name]
		if a == nil {
			a = vpamodel.NewAggregateContainerState()
			t.aggregates[name] = a
			m.aggregates++
		}
		c = vpamodel.NewContainerState(vpamodel.Resources{
			vpamodel.ResourceCPU:    vpamodel.CPUAmountFromCores(requests.Cpu().AsApproximateFloat64()),
			vpamodel.ResourceMemory: vpamodel.MemoryAmountFromBytes(requests.Memory().AsApproximateFloat64()),
		}, a)
		t.containers[k] = c
		m.containers++
		m.byPod[pod] = append(m.byPod[pod], podEntry{t, k})
	}
	return c
}

// Result is a Recommendation's state as of now.
type Result struct {
	// Ready: every container has enough history; Reason and Message say
	// why not otherwise.
	Ready           bool
	Reason, Message string
	// Containers are the recommendations, by container name (only when
	// Ready).
	Containers []analysisv1alpha1.RecommendedContainerStatus
	// Peaks are the highest usage seen of each container name.
	Peaks map[string]corev1.ResourceList
	// Samples is the fewest CPU samples of any container.
	Samples int
}

// Recommend computes a Recommendation's result.
func (m *Model) Recommend(rec types.NamespacedName) (Result, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.targets[rec]
	if t == nil {
		return Result{}, false
	}
	if len(t.aggregates) == 0 {
		return Result{Reason: "NoSamples", Message: "no usage reported yet for the target's containers (is koordlet running on their nodes, and does the target have running pods?)"}, true
	}
	res := Result{Ready: true, Samples: math.MaxInt, Peaks: map[string]corev1.ResourceList{}}
	names := slices.Sorted(maps.Keys(t.aggregates))
	for _, name := range names {
		a := t.aggregates[name]
		span := a.LastSampleStart.Sub(a.FirstSampleStart)
		res.Samples = min(res.Samples, a.TotalSamplesCount)
		if a.TotalSamplesCount < m.cfg.MinSamples || span < m.cfg.WarmUp {
			res.Ready, res.Reason = false, "NotEnoughData"
			res.Message = fmt.Sprintf("container %q has %d samples over %v; a recommendation needs %d over %v", name, a.TotalSamplesCount, span.Round(time.Second), m.cfg.MinSamples, m.cfg.WarmUp)
		}
		res.Peaks[name] = corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewMilliQuantity(int64(math.Ceil(a.AggregateCPUUsage.Percentile(1.0)*1000)), resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(int64(math.Ceil(a.AggregateMemoryPeaks.Percentile(1.0))), resource.BinarySI),
		}
	}
	if !res.Ready {
		return res, true
	}
	res.Reason, res.Message = "Recommended", fmt.Sprintf("every container has at least %d samples over %v", m.cfg.MinSamples, m.cfg.WarmUp)
	got := m.recommender.GetRecommendedPodResources(t.aggregates)
	for _, name := range names {
		r := got[name]
		st := analysisv1alpha1.RecommendedContainerStatus{ContainerName: name,
			Resources: asList(r.Target), LowerBound: asList(r.LowerBound), UpperBound: asList(r.UpperBound)}
		if req, ok := t.requests[name]; ok && (req.cpu >= 0 || req.memory >= 0) {
			st.CurrentRequests = corev1.ResourceList{}
			for _, rn := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				var q resource.Quantity
				switch {
				case rn == corev1.ResourceCPU && req.cpu >= 0:
					q = *resource.NewMilliQuantity(req.cpu, resource.DecimalSI)
				case rn == corev1.ResourceMemory && req.memory >= 0:
					q = *resource.NewQuantity(req.memory, resource.BinarySI)
				default:
					continue
				}
				st.CurrentRequests[rn] = q
				if tq := st.Resources[rn]; !tq.IsZero() {
					if st.RequestsPercentOfTarget == nil {
						st.RequestsPercentOfTarget = map[corev1.ResourceName]int64{}
					}
					st.RequestsPercentOfTarget[rn] = int64(math.Round(q.AsApproximateFloat64() / tq.AsApproximateFloat64() * 100))
				}
			}
		}
		res.Containers = append(res.Containers, st)
	}
	return res, true
}

// asList rounds CPU up to a millicore and memory up to a MiB, the grain a
// person sets requests in.
func asList(r vpamodel.Resources) corev1.ResourceList {
	out := corev1.ResourceList{}
	if v, ok := r[vpamodel.ResourceCPU]; ok {
		out[corev1.ResourceCPU] = *resource.NewMilliQuantity(int64(v), resource.DecimalSI)
	}
	if v, ok := r[vpamodel.ResourceMemory]; ok {
		mib := (int64(v) + (1 << 20) - 1) >> 20
		out[corev1.ResourceMemory] = *resource.NewQuantity(mib<<20, resource.BinarySI)
	}
	return out
}

// Checkpoints serialises a Recommendation's aggregates, by container name.
func (m *Model) Checkpoints(rec types.NamespacedName) ([]analysisv1alpha1.ContainerCheckpoint, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.targets[rec]
	if t == nil {
		return nil, nil
	}
	var out []analysisv1alpha1.ContainerCheckpoint
	for _, name := range slices.Sorted(maps.Keys(t.aggregates)) {
		vcp, err := t.aggregates[name].SaveToCheckpoint()
		if err != nil {
			return nil, fmt.Errorf("container %q: %w", name, err)
		}
		out = append(out, toCheckpoint(name, vcp))
	}
	return out, nil
}

// Size is how many aggregates and container states the model holds.
func (m *Model) Size() (aggregates, containers int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.aggregates, m.containers
}

func toCheckpoint(name string, c *vpatypes.VerticalPodAutoscalerCheckpointStatus) analysisv1alpha1.ContainerCheckpoint {
	h := func(v vpatypes.HistogramCheckpoint) analysisv1alpha1.HistogramCheckpoint {
		out := analysisv1alpha1.HistogramCheckpoint{ReferenceTimestamp: v.ReferenceTimestamp, TotalWeight: strconv.FormatFloat(v.TotalWeight, 'g', -1, 64)}
		if len(v.BucketWeights) > 0 {
			out.BucketWeights = make(map[string]uint32, len(v.BucketWeights))
			for i, w := range v.BucketWeights {
				out.BucketWeights[strconv.Itoa(i)] = w
			}
		}
		return out
	}
	return analysisv1alpha1.ContainerCheckpoint{ContainerName: name, Version: c.Version, CPUHistogram: h(c.CPUHistogram), MemoryHistogram: h(c.MemoryHistogram),
		FirstSampleStart: c.FirstSampleStart, LastSampleStart: c.LastSampleStart, TotalSamplesCount: c.TotalSamplesCount}
}

// fromCheckpoint parses a checkpoint read from the API: a bucket index or
// weight that does not parse is an error naming it.
func fromCheckpoint(c analysisv1alpha1.ContainerCheckpoint) (*vpatypes.VerticalPodAutoscalerCheckpointStatus, error) {
	h := func(field string, v analysisv1alpha1.HistogramCheckpoint) (vpatypes.HistogramCheckpoint, error) {
		out := vpatypes.HistogramCheckpoint{ReferenceTimestamp: v.ReferenceTimestamp, BucketWeights: make(map[int]uint32, len(v.BucketWeights))}
		if v.TotalWeight != "" {
			w, err := strconv.ParseFloat(v.TotalWeight, 64)
			if err != nil || w < 0 || math.IsInf(w, 0) || math.IsNaN(w) {
				return out, fmt.Errorf("%s.totalWeight %q: not a non-negative number", field, v.TotalWeight)
			}
			out.TotalWeight = w
		}
		for k, w := range v.BucketWeights {
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i > 10000 {
				return out, fmt.Errorf("%s.bucketWeights key %q: not a bucket index", field, k)
			}
			out.BucketWeights[i] = w
		}
		return out, nil
	}
	cpu, err := h("cpuHistogram", c.CPUHistogram)
	if err != nil {
		return nil, err
	}
	mem, err := h("memoryHistogram", c.MemoryHistogram)
	if err != nil {
		return nil, err
	}
	if c.TotalSamplesCount < 0 {
		return nil, fmt.Errorf("totalSamplesCount %d: negative", c.TotalSamplesCount)
	}
	return &vpatypes.VerticalPodAutoscalerCheckpointStatus{Version: c.Version, CPUHistogram: cpu, MemoryHistogram: mem,
		FirstSampleStart: c.FirstSampleStart, LastSampleStart: c.LastSampleStart, TotalSamplesCount: c.TotalSamplesCount, LastUpdateTime: metav1.Now()}, nil
}
