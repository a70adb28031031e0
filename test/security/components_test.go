package security

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/koord-project/koord/internal/controlplane"
	"github.com/koord-project/koord/pkg/features"
	"github.com/koord-project/koord/pkg/slo/manager"
)

// startManager runs koord-manager in this process, in namespace
// koord-system, until the test ends; set changes its options.
func startManager(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane, set ...func(*manager.Options)) {
	t.Helper()
	if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "koord-system"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	ctrl.SetLogger(klog.NewKlogr())
	o := manager.Options{Namespace: "koord-system", MetricsAddr: "0", HealthAddr: "0", Gates: features.New(), InProcess: true}
	for _, s := range set {
		s(&o)
	}
	mgrCtx, stop := context.WithCancel(ctx)
	mgr, err := manager.New(mgrCtx, cp.Config, o)
	if err != nil {
		stop()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mgrCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("koord-manager: %v", err)
		}
	})
}

// createNamespaces makes the namespaces a test's tenants use.
func createNamespaces(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane, names ...string) {
	t.Helper()
	for _, ns := range names {
		if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// reportIdle reports each node nearly idle, as its koordlet would: a
// node whose NodeMetric was never reported is kept out by
// LoadAwareScheduling.
func reportIdle(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane, nodes ...string) {
	t.Helper()
	for _, n := range nodes {
		if err := cp.ReportNodeMetric(ctx, n, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("1Gi")}, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
}
