package compat

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
)

// Reasons of the Events a Reporter records.
const (
	ReasonNotActedOn   = "UnsupportedField"
	ReasonUnknownField = "UnknownField"
)

// Reporter tells operators, once per object and field, that a field they
// set is kept but not acted on, or is not a field at all: a Warning Event on
// the object, a log line, and koord_<component>_unsupported_field.
type Reporter struct {
	recorder record.EventRecorder
	metric   *prometheus.GaugeVec

	mu sync.Mutex
	// seen is what was reported, by object (kind/namespace/name): the
	// object's UID, so that a new object of the same name is reported
	// afresh, and its reported fields.
	seen map[string]seenObject
}

type seenObject struct {
	uid    types.UID
	fields map[string]bool
}

func objectKey(object, namespace, name string) string { return object + "/" + namespace + "/" + name }

// NewReporter makes the Reporter of a component ("manager", "scheduler",
// "koordlet"); its metric is registered on reg when reg is not nil.
func NewReporter(component string, recorder record.EventRecorder, reg prometheus.Registerer) *Reporter {
	r := &Reporter{
		recorder: recorder,
		metric: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "koord_" + component + "_unsupported_field",
			Help: "Set to 1 for each Koordinator field an object carries that Koord keeps but does not act on (reason not_acted_on), or that no Koordinator version knows (reason unknown).",
		}, []string{"object", "field", "reason"}),
		seen: map[string]seenObject{},
	}
	if reg != nil {
		// A second Reporter of the component in one process (tests run
		// several managers) shares the first one's metric.
		if err := reg.Register(r.metric); err != nil {
			if are, ok := err.(prometheus.AlreadyRegisteredError); ok {
				r.metric = are.ExistingCollector.(*prometheus.GaugeVec)
			}
		}
	}
	return r
}

// NotActedOn reports fields of obj (of kind object) that Koord does not act on.
func (r *Reporter) NotActedOn(obj runtime.Object, object string, fields []string) {
	r.report(obj, object, fields, "not_acted_on", ReasonNotActedOn,
		"%s sets %s: Koord keeps it but does not act on it yet (see docs/compatibility.md)")
}

// Unknown reports fields of obj that no Koordinator version knows (typos).
func (r *Reporter) Unknown(obj runtime.Object, object string, fields []string) {
	r.report(obj, object, fields, "unknown", ReasonUnknownField,
		"%s sets %s, which is not a Koordinator field: it is ignored (a typo?)")
}

func (r *Reporter) report(obj runtime.Object, object string, fields []string, reason, eventReason, format string) {
	if len(fields) == 0 {
		return
	}
	m, err := apimeta.Accessor(obj)
	if err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	k := objectKey(object, m.GetNamespace(), m.GetName())
	seen, ok := r.seen[k]
	if !ok || seen.uid != m.GetUID() {
		seen = seenObject{uid: m.GetUID(), fields: map[string]bool{}}
		r.seen[k] = seen
	}
	for _, f := range fields {
		key := reason + "/" + f
		if seen.fields[key] {
			continue
		}
		seen.fields[key] = true
		r.metric.WithLabelValues(object, f, reason).Set(1)
		klog.InfoS("Koordinator field not acted on", "object", object, "name", klog.KObj(m), "field", f, "reason", reason)
		if r.recorder != nil {
			r.recorder.Eventf(obj, corev1.EventTypeWarning, eventReason, format, object, f)
		}
	}
}

// Forget drops what was reported for a deleted object.
func (r *Reporter) Forget(object, namespace, name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.seen, objectKey(object, namespace, name))
}
