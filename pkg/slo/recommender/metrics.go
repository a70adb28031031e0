package recommender

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Metrics are the recommender's koord_manager_recommendation_* series: per
// container, the target, the requests and how far apart they are, for
// dashboards of over- and under-provisioning.
type Metrics struct {
	target, requests, percent *prometheus.GaugeVec
	samples                   *prometheus.CounterVec
	resizes                   *prometheus.CounterVec
	ooms                      prometheus.Counter
	model                     *prometheus.GaugeVec
}

// NewMetrics registers the recommender's metrics with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	labels := []string{"namespace", "recommendation", "container", "resource"}
	m := &Metrics{
		target: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "koord_manager_recommendation_target",
			Help: "Recommended requests of a container (cores or bytes)."}, labels),
		requests: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "koord_manager_recommendation_requests",
			Help: "Current requests of the container in the target's newest pod (cores or bytes)."}, labels),
		percent: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "koord_manager_recommendation_requests_percent_of_target",
			Help: "Current requests as a percentage of the target: above 100 over-provisioned, below under-provisioned."}, labels),
		samples: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "koord_manager_recommendation_samples_total",
			Help: "Container usage samples read from NodeMetrics, by result (accepted, or why not)."}, []string{"result"}),
		resizes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "koord_manager_recommendation_resizes_total",
			Help: "In-place pod resizes to a recommendation, by result."}, []string{"result"}),
		ooms: prometheus.NewCounter(prometheus.CounterOpts{Name: "koord_manager_recommendation_oom_kills_total",
			Help: "OOM kills of profiled containers recorded as memory bumps."}),
		model: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "koord_manager_recommendation_model_entries",
			Help: "What the recommender holds in memory: per-name aggregates (two histograms each) and running containers."}, []string{"kind"}),
	}
	var err error
	// A manager restarted in the same process (tests) finds its series
	// registered already and carries on with them.
	for _, g := range []**prometheus.GaugeVec{&m.target, &m.requests, &m.percent, &m.model} {
		if *g, err = register(reg, *g); err != nil {
			return nil, err
		}
	}
	for _, c := range []**prometheus.CounterVec{&m.samples, &m.resizes} {
		if *c, err = register(reg, *c); err != nil {
			return nil, err
		}
	}
	if m.ooms, err = register(reg, m.ooms); err != nil {
		return nil, err
	}
	return m, nil
}

func register[T prometheus.Collector](reg prometheus.Registerer, c T) (T, error) {
	err := reg.Register(c)
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(T); ok {
			return existing, nil
		}
	}
	return c, err
}

func (m *Metrics) sample(result string, n int) {
	if m != nil {
		m.samples.WithLabelValues(result).Add(float64(n))
	}
}

func (m *Metrics) resize(result string) {
	if m != nil {
		m.resizes.WithLabelValues(result).Inc()
	}
}

func (m *Metrics) size(aggregates, containers int) {
	if m != nil {
		m.model.WithLabelValues("aggregates").Set(float64(aggregates))
		m.model.WithLabelValues("containers").Set(float64(containers))
	}
}

func (m *Metrics) set(rec types.NamespacedName, res Result) {
	if m == nil {
		return
	}
	m.forget(rec)
	for _, c := range res.Containers {
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			l := prometheus.Labels{"namespace": rec.Namespace, "recommendation": rec.Name, "container": c.ContainerName, "resource": string(r)}
			if q, ok := c.Resources[r]; ok {
				m.target.With(l).Set(q.AsApproximateFloat64())
			}
			if q, ok := c.CurrentRequests[r]; ok {
				m.requests.With(l).Set(q.AsApproximateFloat64())
			}
			if p, ok := c.RequestsPercentOfTarget[r]; ok {
				m.percent.With(l).Set(float64(p))
			}
		}
	}
}

func (m *Metrics) forget(rec types.NamespacedName) {
	if m == nil {
		return
	}
	l := prometheus.Labels{"namespace": rec.Namespace, "recommendation": rec.Name}
	m.target.DeletePartialMatch(l)
	m.requests.DeletePartialMatch(l)
	m.percent.DeletePartialMatch(l)
}

func (m *Metrics) oom() {
	if m != nil {
		m.ooms.Inc()
	}
}
