package config

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// An operator's typo survives a koord-manager restart without turning
// co-location off: the restarted store acts on the last configuration the
// previous one accepted, not on the defaults.
func TestStoreKeepsLastGoodAcrossRestarts(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().WithObjects(cm(map[string]string{ColocationKey: `{"enable":true,"cpuReclaimThresholdPercent":70}`})).Build()
	key := types.NamespacedName{Namespace: "koord-system", Name: ConfigMapName}
	first := &Store{Reader: c, Writer: c, Key: key}
	if cfg := first.Get(ctx); !cfg.Colocation.Enable || cfg.Colocation.CPUReclaimThresholdPercent != 70 {
		t.Fatalf("valid configuration not in force: %+v", cfg.Colocation)
	}
	var good corev1.ConfigMap
	if err := c.Get(ctx, types.NamespacedName{Namespace: "koord-system", Name: LastGoodName(ConfigMapName)}, &good); err != nil {
		t.Fatalf("the accepted configuration was not kept: %v", err)
	}
	// The operator breaks it, and the manager restarts.
	var live corev1.ConfigMap
	if err := c.Get(ctx, key, &live); err != nil {
		t.Fatal(err)
	}
	live.Data[ColocationKey] = `{"enable":"yes"`
	if err := c.Update(ctx, &live); err != nil {
		t.Fatal(err)
	}
	restarted := &Store{Reader: c, Writer: c, Key: key}
	if cfg := restarted.Get(ctx); !cfg.Colocation.Enable || cfg.Colocation.CPUReclaimThresholdPercent != 70 {
		t.Errorf("after a restart with an invalid configuration: %+v, want the last good one (enable, 70)", cfg.Colocation)
	}
	// A fixed configuration takes over and becomes the last good one.
	live.Data[ColocationKey] = `{"enable":true,"cpuReclaimThresholdPercent":50}`
	if err := c.Update(ctx, &live); err != nil {
		t.Fatal(err)
	}
	if cfg := restarted.Get(ctx); cfg.Colocation.CPUReclaimThresholdPercent != 50 {
		t.Errorf("fixed configuration not in force: %+v", cfg.Colocation)
	}
	if err := c.Get(ctx, types.NamespacedName{Namespace: "koord-system", Name: LastGoodName(ConfigMapName)}, &good); err != nil || good.Data[ColocationKey] != live.Data[ColocationKey] {
		t.Errorf("last good configuration not updated: %v %v", good.Data, err)
	}
	// Without anything saved, an invalid configuration at start means defaults.
	bare := fake.NewClientBuilder().WithObjects(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "koord-system", Name: ConfigMapName},
		Data: map[string]string{ColocationKey: `{"enable":"yes"`}}).Build()
	if cfg := (&Store{Reader: bare, Writer: bare, Key: key}).Get(ctx); cfg.Colocation.Enable {
		t.Errorf("nothing saved: %+v, want the defaults", cfg.Colocation)
	}
}
