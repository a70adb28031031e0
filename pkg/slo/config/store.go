package config

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Store serves the current configuration to the controllers. It re-parses
// the ConfigMap only when its resourceVersion changes; a ConfigMap that does
// not parse keeps the last good configuration in force (an operator's typo
// must not strip batch resources from every node) and is reported once, as
// a Warning event on the ConfigMap and in the log.
type Store struct {
	Reader   client.Reader
	Key      types.NamespacedName
	Recorder record.EventRecorder

	mu      sync.Mutex
	version string
	current Config
	loaded  bool
}

// Get returns the configuration in force.
func (s *Store) Get(ctx context.Context) Config {
	s.mu.Lock()
	defer s.mu.Unlock()
	var cm corev1.ConfigMap
	err := s.Reader.Get(ctx, s.Key, &cm)
	switch {
	case apierrors.IsNotFound(err):
		if !s.loaded || s.version != "" {
			s.current, _ = Parse(nil)
			s.version, s.loaded = "", true
		}
		return s.current
	case err != nil:
		klog.FromContext(ctx).Error(err, "reading the configuration; keeping the one in force", "configmap", s.Key)
		if !s.loaded {
			s.current, s.loaded = Default(), true
		}
		return s.current
	}
	if s.loaded && cm.ResourceVersion == s.version {
		return s.current
	}
	s.version = cm.ResourceVersion
	cfg, err := Parse(&cm)
	if err != nil {
		if !s.loaded {
			s.current, s.loaded = Default(), true
		}
		klog.FromContext(ctx).Error(err, "invalid configuration ignored; keeping the one in force", "configmap", s.Key)
		if s.Recorder != nil {
			s.Recorder.Eventf(&cm, corev1.EventTypeWarning, "InvalidConfig", "ignored, the previous configuration stays in force: %v", err)
		}
		return s.current
	}
	s.current, s.loaded = cfg, true
	return s.current
}
