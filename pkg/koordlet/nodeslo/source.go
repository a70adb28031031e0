package nodeslo

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	slolisters "github.com/koord-project/koord/pkg/client/listers/slo/v1alpha1"
)

// Source serves the node's strategy from a NodeSLO lister (an informer
// watching only the node's own NodeSLO). It resolves a NodeSLO once per
// resourceVersion; one that does not resolve is reported (a Warning event on
// it, one log line) and the last valid strategy stays in force. A missing
// NodeSLO means Koordinator's defaults.
type Source struct {
	Lister   slolisters.NodeSLOLister
	Node     string
	Recorder record.EventRecorder

	mu      sync.Mutex
	version string
	current Strategy
	loaded  bool
}

// Get is the strategy in force.
func (s *Source) Get(logger klog.Logger) Strategy {
	s.mu.Lock()
	defer s.mu.Unlock()
	slo, err := s.Lister.Get(s.Node)
	switch {
	case apierrors.IsNotFound(err):
		if !s.loaded || s.version != "" {
			s.current, s.version, s.loaded = Default(), "", true
		}
		return s.current
	case err != nil:
		if !s.loaded {
			s.current, s.loaded = Default(), true
		}
		return s.current
	}
	if s.loaded && slo.ResourceVersion == s.version {
		return s.current
	}
	s.version = slo.ResourceVersion
	st, err := Resolve(&slo.Spec)
	if err != nil {
		if !s.loaded {
			s.current, s.loaded = Default(), true
		}
		logger.Error(err, "Invalid NodeSLO ignored; the last valid one stays in force", "nodeslo", slo.Name)
		if s.Recorder != nil {
			s.Recorder.Eventf(slo, corev1.EventTypeWarning, "InvalidNodeSLO", "koordlet ignored it, the last valid strategy stays in force: %v", err)
		}
		return s.current
	}
	s.current, s.loaded = st, true
	return s.current
}
