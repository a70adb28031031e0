package config

import (
	"context"
	"maps"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/koord-project/koord/pkg/compat"
)

// Store serves the current configuration to the controllers. It re-parses
// the ConfigMap only when its resourceVersion changes; a key that does not
// parse or validate keeps its part of the configuration in force (an
// operator's typo must not strip batch resources from every node), the
// other keys take effect, and it is reported once, as a Warning event on
// the ConfigMap and in the log.
//
// With a Writer, the last configuration that parsed is also kept in the
// ConfigMap LastGoodName(name) beside it, and a restarted manager that finds the
// ConfigMap invalid acts on that one, not on the defaults: the defaults turn
// co-location off, which would strip batch resources from every node.
type Store struct {
	Reader   client.Reader
	Writer   client.Writer
	Key      types.NamespacedName
	Recorder record.EventRecorder
	// Reporter, when set, reports the fields of the ConfigMap that are
	// typos or that Koord does not act on.
	Reporter *compat.Reporter

	mu      sync.Mutex
	version string
	current Config
	loaded  bool
	// saved is the data last written to the last-good ConfigMap.
	saved map[string]string
}

// LastGoodName is the ConfigMap, beside the configuration ConfigMap name,
// that holds the last configuration koord-manager accepted.
func LastGoodName(name string) string { return name + "-last-good" }

func (s *Store) lastGood() string { return LastGoodName(s.Key.Name) }

// fallback is the configuration to act on when none has been accepted since
// the start: the last good one saved before, else the defaults.
func (s *Store) fallback(ctx context.Context) Config {
	var cm corev1.ConfigMap
	if err := s.Reader.Get(ctx, types.NamespacedName{Namespace: s.Key.Namespace, Name: s.lastGood()}, &cm); err != nil {
		if !apierrors.IsNotFound(err) {
			klog.FromContext(ctx).Error(err, "reading the last good configuration; acting on the defaults", "configmap", klog.KRef(s.Key.Namespace, s.lastGood()))
		}
		return Default()
	}
	cfg, err := Parse(&cm)
	if err != nil {
		klog.FromContext(ctx).Error(err, "the last good configuration does not parse; acting on the defaults", "configmap", klog.KRef(s.Key.Namespace, s.lastGood()))
		return Default()
	}
	klog.FromContext(ctx).Info("Acting on the last good configuration", "configmap", klog.KRef(s.Key.Namespace, s.lastGood()))
	s.saved = cm.Data
	return cfg
}

// save keeps cm's data as the last good configuration.
func (s *Store) save(ctx context.Context, cm *corev1.ConfigMap) {
	if s.Writer == nil || maps.Equal(s.saved, cm.Data) {
		return
	}
	good := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: s.Key.Namespace, Name: s.lastGood(),
		Labels: map[string]string{"app.kubernetes.io/managed-by": "koord-manager"}}, Data: cm.Data}
	err := s.Writer.Update(ctx, good)
	if apierrors.IsNotFound(err) {
		err = s.Writer.Create(ctx, good)
	}
	if err != nil {
		klog.FromContext(ctx).Error(err, "saving the last good configuration; will retry on the next change", "configmap", klog.KRef(s.Key.Namespace, s.lastGood()))
		return
	}
	s.saved = maps.Clone(cm.Data)
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
			s.current, s.loaded = s.fallback(ctx), true
		}
		return s.current
	}
	if s.loaded && cm.ResourceVersion == s.version {
		return s.current
	}
	s.version = cm.ResourceVersion
	// Key by key, as Koordinator reads it: a key in error keeps its part
	// of the configuration in force (after a restart, the last good one),
	// the others take effect.
	var cfg Config
	if s.loaded {
		cfg, err = ParseOver(&cm, s.current)
	} else if cfg, err = Parse(&cm); err != nil {
		cfg, err = ParseOver(&cm, s.fallback(ctx))
	}
	s.loaded = true
	if err != nil {
		klog.FromContext(ctx).Error(err, "invalid configuration keys ignored; they keep the configuration in force", "configmap", s.Key)
		if s.Recorder != nil {
			s.Recorder.Eventf(&cm, corev1.EventTypeWarning, "InvalidConfig", "ignored, the previous configuration of these keys stays in force: %v", err)
		}
	}
	s.current = cfg
	if len(cfg.Warnings) > 0 {
		klog.FromContext(ctx).Info("Fields no Koordinator version knows are ignored", "configmap", s.Key, "fields", cfg.Warnings)
	}
	if s.Reporter != nil {
		s.Reporter.Unknown(&cm, compat.SLOControllerConfig, cfg.Warnings)
		s.Reporter.NotActedOn(&cm, compat.SLOControllerConfig, cfg.NotActedOn)
	}
	// Only a ConfigMap every key of which took effect is the last good one.
	if err == nil {
		s.save(ctx, &cm)
	}
	return s.current
}
