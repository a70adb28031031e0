// Package integration runs Koord against a real etcd and kube-apiserver in
// this process (internal/controlplane), and the koord-scheduler binary against
// the same.
package integration

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/koord-project/koord/internal/controlplane"
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
