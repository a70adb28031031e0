package webhook

import (
	"errors"
	"regexp"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are koord_manager_webhook_*: what was asked, what was refused and
// why, and how long each answer took (the API server waits for it).
type metrics struct {
	requests   *prometheus.CounterVec
	rejections *prometheus.CounterVec
	duration   *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "koord_manager_webhook_requests_total",
			Help: "Admission requests answered, by webhook, operation and result (allowed, patched, denied, error).",
		}, []string{"webhook", "operation", "result"}),
		rejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "koord_manager_webhook_rejections_total",
			Help: "Admission requests refused, by webhook and the field whose rule refused them.",
		}, []string{"webhook", "reason"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "koord_manager_webhook_duration_seconds",
			Help:    "Time to answer an admission request, from decoding it to the response.",
			Buckets: []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5},
		}, []string{"webhook"}),
	}
	for i, c := range []prometheus.Collector{m.requests, m.rejections, m.duration} {
		if err := reg.Register(c); err != nil {
			// A second manager in one process (tests) shares the first's.
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return nil, err
			}
			switch i {
			case 0:
				m.requests = are.ExistingCollector.(*prometheus.CounterVec)
			case 1:
				m.rejections = are.ExistingCollector.(*prometheus.CounterVec)
			case 2:
				m.duration = are.ExistingCollector.(*prometheus.HistogramVec)
			}
		}
	}
	return m, nil
}

var index = regexp.MustCompile(`\[[0-9]+\]`)

// reasonLabel keeps the reason label's values few: list indices are dropped
// (spec.owners[3] counts as spec.owners[*]).
func reasonLabel(field string) string {
	return index.ReplaceAllString(field, "[*]")
}
