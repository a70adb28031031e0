package agent

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	v1qos "k8s.io/kubernetes/pkg/apis/core/v1/helper/qos"

	"github.com/koord-project/koord/apis/extension"
	"github.com/koord-project/koord/pkg/koordlet/cgroup"
	"github.com/koord-project/koord/pkg/koordlet/ebpf/runqlat"
)

// latency turns the eBPF probe's per-cgroup histograms into per-pod ones:
// a pod's waits are those of its cgroup and its containers' cgroups in the
// cpu hierarchy.
type latency struct {
	probe *runqlat.Probe

	mu   sync.Mutex
	pods map[types.UID]podLatency
	// reported is each pod's histogram at its last NodeMetric report, so
	// that podsMetric says how the pod fared since then; guarded is the same
	// for the interference guard's last look.
	reported, guarded map[types.UID]runqlat.Hist
}

type podLatency struct {
	namespace, name string
	hist            runqlat.Hist
	cgroups         []uint64
}

func newLatency(p *runqlat.Probe) *latency {
	return &latency{probe: p, pods: map[types.UID]podLatency{}, reported: map[types.UID]runqlat.Hist{}, guarded: map[types.UID]runqlat.Hist{}}
}

// collect reads every pod's histogram; pods that left have their cgroups'
// entries removed from the BPF map.
func (l *latency) collect(layout *cgroup.Layout, pods []*corev1.Pod) {
	next := map[types.UID]podLatency{}
	for _, p := range pods {
		dir := layout.Path("cpu", layout.PodDir(v1qos.GetPodQOS(p), p.UID), "")
		ids := cgroupIDs(dir)
		pl := podLatency{namespace: p.Namespace, name: p.Name, cgroups: ids}
		for _, id := range ids {
			if h, err := l.probe.Histogram(id); err == nil {
				pl.hist = pl.hist.Add(h)
			}
		}
		next[p.UID] = pl
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for uid, old := range l.pods {
		if _, ok := next[uid]; !ok {
			for _, id := range old.cgroups {
				_ = l.probe.Forget(id)
			}
			delete(l.reported, uid)
			delete(l.guarded, uid)
		}
	}
	l.pods = next
}

// cgroupIDs are the ids of a pod's cgroup and its direct children (containers).
func cgroupIDs(dir string) []uint64 {
	var ids []uint64
	if id, err := runqlat.CgroupID(dir); err == nil {
		ids = append(ids, id)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ids
	}
	for _, e := range entries {
		if e.IsDir() {
			if id, err := runqlat.CgroupID(filepath.Join(dir, e.Name())); err == nil {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// extension is what podsMetric carries for a pod: its run-queue latency
// since the last report. It moves the report mark forward.
func (l *latency) extension(uid types.UID) *runtime.RawExtension {
	l.mu.Lock()
	defer l.mu.Unlock()
	pl, ok := l.pods[uid]
	if !ok {
		return nil
	}
	var since runqlat.Hist
	prev := l.reported[uid]
	for i := range since {
		since[i] = pl.hist[i] - min(prev[i], pl.hist[i])
	}
	l.reported[uid] = pl.hist
	b, err := json.Marshal(map[string]any{
		"runqueueLatency": map[string]any{"p99Seconds": since.Quantile(0.99), "p50Seconds": since.Quantile(0.5), "waits": since.Count()},
	})
	if err != nil {
		return nil
	}
	return &runtime.RawExtension{Raw: b}
}

var latencyDesc = prometheus.NewDesc("koordlet_pod_runqueue_latency_seconds",
	"Time the pod's runnable tasks waited for a CPU (eBPF, sched_wakeup to sched_switch).",
	[]string{"namespace", "pod"}, nil)

// Describe and Collect export each pod's histogram.
func (l *latency) Describe(ch chan<- *prometheus.Desc) { ch <- latencyDesc }

func (l *latency) Collect(ch chan<- prometheus.Metric) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, pl := range l.pods {
		buckets := map[float64]uint64{}
		var cum uint64
		var sum float64
		for i, c := range pl.hist {
			cum += c
			buckets[runqlat.UpperBound(i)] = cum
			sum += float64(c) * runqlat.UpperBound(i) / 1.5 // slot midpoint (geometric), an estimate
		}
		m, err := prometheus.NewConstHistogram(latencyDesc, cum, sum, buckets, pl.namespace, pl.name)
		if err == nil {
			ch <- m
		}
	}
}

// lsInterval is the p99 run-queue latency of the node's LS, LSR and LSE pods
// together since the last call, and how many waits it is made of: what the
// interference guard watches. A pod's first interval starts when it is
// first seen here.
func (l *latency) lsInterval(pods []*corev1.Pod) (p99 time.Duration, waits uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var sum runqlat.Hist
	for _, p := range pods {
		if q := extension.EnforcedQoSClass(p); q != extension.QoSLS && q != extension.QoSLSR && q != extension.QoSLSE {
			continue
		}
		pl, ok := l.pods[p.UID]
		if !ok {
			continue
		}
		if prev, seen := l.guarded[p.UID]; seen {
			for i := range sum {
				sum[i] += pl.hist[i] - min(prev[i], pl.hist[i])
			}
		}
		l.guarded[p.UID] = pl.hist
	}
	return time.Duration(sum.Quantile(0.99) * float64(time.Second)), sum.Count()
}

// loadProbe loads the run-queue latency probe, or says once why it cannot.
func (a *Agent) loadProbe(logger klog.Logger) {
	p, err := runqlat.Load()
	if err != nil {
		a.metrics.ebpfEnabled.Set(0)
		logger.Error(err, "eBPF run-queue latency is off; koordlet carries on without it")
		return
	}
	a.latency = newLatency(p)
	if err := a.reg.Register(a.latency); err != nil {
		logger.Error(err, "Cannot export run-queue latency metrics")
	}
	a.metrics.ebpfEnabled.Set(1)
	logger.Info("eBPF run-queue latency probe attached")
}
