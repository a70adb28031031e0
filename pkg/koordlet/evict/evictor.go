package evict

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/koord-project/koord/apis/extension"
)

// Cool-downs after an eviction, Koordinator's: memory frees fast, CPU
// satisfaction needs its window to show the effect.
var coolDown = map[string]time.Duration{ReasonMemory: 4 * time.Second, ReasonCPU: 20 * time.Second}

// Evictor evicts pods through the Eviction API, with an Event on each pod
// and a count by reason, and holds each reason back for its cool-down.
type Evictor struct {
	Client   kubernetes.Interface
	Recorder record.EventRecorder
	Total    *prometheus.CounterVec // by reason

	mu   sync.Mutex
	last map[string]time.Time
}

// NewEvictionsMetric is koordlet_pod_evictions_total{reason}.
func NewEvictionsMetric() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "koordlet_pod_evictions_total",
		Help: "BE pods koordlet evicted, by reason (BEMemoryEvict, BECPUEvict).",
	}, []string{"reason"})
}

// Ready says whether reason is out of its cool-down at now.
func (e *Evictor) Ready(reason string, now time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return now.Sub(e.last[reason]) >= coolDown[reason]
}

// Evict evicts the victims and returns how many went. A pod that is not BE
// is never evicted (a bug upstream of here would otherwise hurt a service).
func (e *Evictor) Evict(ctx context.Context, now time.Time, victims []Victim) int {
	logger := klog.FromContext(ctx)
	n := 0
	for _, v := range victims {
		if q := extension.EnforcedQoSClass(v.Pod); q != extension.QoSBE {
			logger.Error(nil, "Refusing to evict a pod that is not BE", "pod", klog.KObj(v.Pod), "qos", q)
			continue
		}
		err := e.Client.PolicyV1().Evictions(v.Pod.Namespace).Evict(ctx, &policyv1.Eviction{
			ObjectMeta: metav1.ObjectMeta{Name: v.Pod.Name, Namespace: v.Pod.Namespace, UID: v.Pod.UID},
		})
		switch {
		case apierrors.IsNotFound(err):
			continue // gone already
		case err != nil:
			// 429: a PodDisruptionBudget says not now; others are retried at the next look.
			logger.Info("Cannot evict BE pod", "pod", klog.KObj(v.Pod), "reason", v.Reason, "err", err)
			continue
		}
		n++
		e.Total.WithLabelValues(v.Reason).Inc()
		e.Recorder.Event(v.Pod, corev1.EventTypeWarning, "Evicted", fmt.Sprintf("koordlet %s: %s", v.Reason, v.Message))
		logger.Info("Evicted BE pod", "pod", klog.KObj(v.Pod), "reason", v.Reason, "why", v.Message)
		e.mu.Lock()
		if e.last == nil {
			e.last = map[string]time.Time{}
		}
		e.last[v.Reason] = now
		e.mu.Unlock()
	}
	return n
}
