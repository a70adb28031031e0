package integration

import (
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/koord-project/koord/internal/controlplane"
	"github.com/koord-project/koord/manifests"
)

// TestTeardownLeavesNothing: after Stop, no listener, no state directory and
// no goroutine of the control plane or the scheduler is left.
func TestTeardownLeavesNothing(t *testing.T) {
	// A temporary directory of its own: go test runs other packages'
	// control planes at the same time, in the shared one.
	t.Setenv("TMPDIR", t.TempDir())
	var endpoints []string
	var dir string
	// Each run is a subtest, so that the test-scoped contexts the API server
	// hangs off are cancelled before we look for leftovers. The first run also
	// starts kube-apiserver's once-per-process goroutines (its klog flusher);
	// the second must leave nothing behind at all.
	runOnce(t, "first", &endpoints, &dir)
	before := goleak.IgnoreCurrent()
	tmpBefore := tempEntries(t)
	runOnce(t, "second", &endpoints, &dir)
	if len(endpoints) == 0 {
		t.Fatal("control plane did not start")
	}
	for _, ep := range endpoints {
		host := ep[strings.Index(ep, "://")+3:]
		if c, err := net.DialTimeout("tcp", host, time.Second); err == nil {
			c.Close()
			t.Errorf("%s still accepts connections after Stop", ep)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("state directory %s left behind (%v)", dir, err)
	}
	for name := range tempEntries(t) {
		if !tmpBefore[name] {
			t.Errorf("%s left behind in %s", name, os.TempDir())
		}
	}
	// client-go keeps a certificate-rotation worker per client TLS config in
	// its global transport cache; that is client-go's, not ours, and its work
	// queue winds down only some 25 s after the server is gone. Everything
	// else must end, some after the API server's 3 s watch-cache timeout.
	ignore := []goleak.Option{before,
		goleak.IgnoreAnyFunction("k8s.io/client-go/transport.(*dynamicClientCert).run"),
		goleak.IgnoreAnyFunction("k8s.io/client-go/transport.(*dynamicClientCert).runWorker"),
	}
	var err error
	start := time.Now()
	defer func() { t.Logf("goroutines settled after %s", time.Since(start)) }()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); {
		if err = goleak.Find(ignore...); err == nil {
			break
		}

	}
	if err != nil {
		t.Errorf("goroutines left behind: %v", err)
	}
}

func runOnce(t *testing.T, name string, endpoints *[]string, dir *string) {
	t.Run(name, func(t *testing.T) {
		ctx := testContext(t)
		cp, err := controlplane.Start(controlplane.Options{})
		if err != nil {
			t.Fatal(err)
		}
		*endpoints, *dir = cp.Endpoints(), cp.Dir
		defer cp.Stop()
		sched, err := cp.StartScheduler(ctx, manifests.SchedulerConfig)
		if err != nil {
			t.Fatal(err)
		}
		defer sched.Stop()
		if _, err := cp.CreateNode(ctx, controlplane.NodeSpec{Name: "n", CPU: "1", Memory: "1Gi"}); err != nil {
			t.Fatal(err)
		}
		if _, err := cp.CreatePod(ctx, controlplane.PodSpec{Name: "p", SchedulerName: "koord-scheduler"}); err != nil {
			t.Fatal(err)
		}
		if _, err := cp.WaitForPodBound(ctx, "default", "p", time.Minute); err != nil {
			t.Fatal(err)
		}
	})
}

// tempEntries lists the test's temporary directory: whatever the control
// plane or the scheduler wrote there (its state directory, with
// kube-apiserver's certificates and keys, and anything else).
func tempEntries(t *testing.T) map[string]bool {
	entries, err := os.ReadDir(os.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, e := range entries {
		names[e.Name()] = true
	}
	return names
}
