// Package integration runs Koord against a real etcd and kube-apiserver in
// this process (internal/controlplane), and the koord-scheduler binary against
// the same.
package integration

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

// startControlPlane starts a control plane that is stopped when the test ends.
func startControlPlane(t *testing.T, opts controlplane.Options) *controlplane.ControlPlane {
	t.Helper()
	cp, err := controlplane.Start(opts)
	if err != nil {
		t.Fatalf("control plane: %v", err)
	}
	t.Cleanup(cp.Stop)
	return cp
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func mustQuantity(t *testing.T, s string) *resource.Quantity {
	t.Helper()
	q, err := resource.ParseQuantity(s)
	if err != nil {
		t.Fatal(err)
	}
	return &q
}

// startScheduler runs koord-scheduler in-process until the test ends.
func startScheduler(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane, config []byte) *controlplane.Scheduler {
	t.Helper()
	sched, err := cp.StartScheduler(ctx, config)
	if err != nil {
		t.Fatalf("starting koord-scheduler: %v", err)
	}
	t.Cleanup(sched.Stop)
	return sched
}

// loadAwareConfig is a koord-scheduler profile with the given
// LoadAwareScheduling args (a YAML flow mapping).
func loadAwareConfig(args string) string {
	return `
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: koord-scheduler
    pluginConfig:
      - name: LoadAwareScheduling
        args: ` + args + "\n"
}

// startManager runs koord-manager in this process until the test ends
// (gcAfter: its reservationGCAfter, 0 for the default). The function it
// returns restarts it as a new process would start: nothing carried over but
// what is in the API server.
func startManager(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane, gcAfter time.Duration) (restart func()) {
	t.Helper()
	return startManagerWith(t, ctx, cp, func(o *manager.Options) { o.ReservationGCAfter = gcAfter })
}

// startManagerWith starts koord-manager in-process with options changed by set.
func startManagerWith(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane, set func(*manager.Options)) (restart func()) {
	t.Helper()
	if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "koord-system"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	ctrl.SetLogger(klog.NewKlogr())
	var stop context.CancelFunc
	var done chan error
	start := func() {
		var mgrCtx context.Context
		mgrCtx, stop = context.WithCancel(ctx)
		o := manager.Options{Namespace: "koord-system", MetricsAddr: "0", HealthAddr: "0", Gates: features.New(), InProcess: true}
		set(&o)
		mgr, err := manager.New(mgrCtx, cp.Config, o)
		if err != nil {
			t.Fatal(err)
		}
		done = make(chan error, 1)
		go func() { done <- mgr.Start(mgrCtx) }()
	}
	start()
	t.Cleanup(func() { stop(); <-done })
	return func() {
		stop()
		<-done
		start()
	}
}
