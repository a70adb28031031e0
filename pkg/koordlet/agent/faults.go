package agent

import (
	"strings"
	"sync"

	"k8s.io/klog/v2"
)

// faults logs each cause of failure once (again only when its error
// changes) and counts every occurrence.
type faults struct {
	mu      sync.Mutex
	last    map[string]string
	metrics *metrics
}

func newFaults(m *metrics) *faults { return &faults{last: map[string]string{}, metrics: m} }

// report counts err and logs it if it is new for cause; it says whether it was.
func (f *faults) report(logger klog.Logger, cause string, err error) bool {
	f.metrics.errors.WithLabelValues(causeLabel(cause)).Inc()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.last[cause] == err.Error() {
		return false
	}
	f.last[cause] = err.Error()
	logger.Error(err, "koordlet cannot do its job; retrying", "cause", cause)
	return true
}

func (f *faults) clear(logger klog.Logger, cause string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.last[cause]; ok {
		delete(f.last, cause)
		logger.Info("Recovered", "cause", cause)
	}
}

// causeLabel keeps metric cardinality bounded: per-pod causes share one label.
func causeLabel(cause string) string {
	kind, _, _ := strings.Cut(cause, "/")
	return kind
}
