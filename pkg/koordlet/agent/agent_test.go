package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/koord-project/koord/internal/topologytest"
	koordfake "github.com/koord-project/koord/pkg/client/clientset/versioned/fake"
)

// logLines is a logger that keeps what it is told.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logger() klog.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, args)
	}, funcr.Options{})
}

func (l *logLines) count(substr string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.lines {
		if strings.Contains(s, substr) {
			n++
		}
	}
	return n
}

// The API server refuses writes for a while: koordlet logs the cause once,
// counts every failure, keeps trying, and publishes once it is back.
func TestAPIServerAwayThenBack(t *testing.T) {
	sysfs, procfs, err := topologytest.WriteSysfs(t.TempDir(), 1, 1, 2, 2, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "uid-n1"}}
	client := fake.NewClientset(node)
	var mu sync.Mutex
	down := true
	client.PrependReactor("create", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		if down {
			return true, nil, errors.New("connection refused")
		}
		return false, nil, nil
	})
	reg := prometheus.NewRegistry()
	a, err := New(client, koordfake.NewSimpleClientset(), Options{NodeName: "n1", SysfsRoot: sysfs, ProcfsRoot: procfs, CgroupRoot: t.TempDir()}, reg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a.start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), a.synced...) {
		t.Fatal("caches did not sync")
	}
	var logs logLines
	lctx := klog.NewContext(ctx, logs.logger())
	for i := 0; i < 5; i++ {
		a.reconcile(lctx)
	}
	if got := testutil.ToFloat64(a.metrics.errors.WithLabelValues("publish")); got != 5 {
		t.Errorf("koordlet_errors_total{cause=publish} = %v, want 5", got)
	}
	if n := logs.count("connection refused"); n != 1 {
		t.Errorf("the failure was logged %d times, want once", n)
	}
	// A pod-cgroup tree that is not there yet is also a cause, logged once.
	if n := logs.count("no kubepods cgroup found"); n != 1 {
		t.Errorf("the missing cgroup tree was logged %d times, want once", n)
	}
	mu.Lock()
	down = false
	mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		a.reconcile(lctx)
		if _, err := client.CoreV1().ConfigMaps("kube-system").Get(ctx, "n1-numa-info", metav1.GetOptions{}); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := client.CoreV1().ConfigMaps("kube-system").Get(ctx, "n1-numa-info", metav1.GetOptions{}); err != nil {
		t.Fatalf("not published after the API server came back: %v", err)
	}
	if logs.count(`"cause"="publish"`) < 2 {
		t.Errorf("recovery not logged: %v", logs.lines)
	}
}

// Without Koord's NodeSLO and Reservation CRDs (lists fail), koordlet does
// not hang: after its deadline it publishes the topology and pins CPUs, and
// the QoS strategies write nothing until the NodeSLO cache syncs.
func TestRunsWithoutKoordCRDs(t *testing.T) {
	old := optionalSyncTimeout
	optionalSyncTimeout = 200 * time.Millisecond
	defer func() { optionalSyncTimeout = old }()
	sysfs, procfs, err := topologytest.WriteSysfs(t.TempDir(), 1, 1, 2, 2, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	client := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "uid-n1"}})
	koord := koordfake.NewSimpleClientset()
	for _, r := range []string{"nodeslos", "reservations"} {
		koord.PrependReactor("list", r, func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewNotFound(schema.GroupResource{Resource: r}, "")
		})
	}
	// A strategy put the besteffort cgroup in the idle class before a
	// restart: acting on the defaults would undo it.
	cgroupRoot := t.TempDir()
	for _, d := range []string{"kubepods", "kubepods/besteffort"} {
		if err := topologytest.WriteCgroup(cgroupRoot, false, d, "0-3"); err != nil {
			t.Fatal(err)
		}
	}
	idle := filepath.Join(cgroupRoot, "cpu/kubepods/besteffort/cpu.idle")
	besteffortCPUs := filepath.Join(cgroupRoot, "cpuset/kubepods/besteffort/cpuset.cpus")
	for path, v := range map[string]string{idle: "1\n", besteffortCPUs: "3\n"} {
		if err := os.WriteFile(path, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	a, err := New(client, koord, Options{NodeName: "n1", SysfsRoot: sysfs, ProcfsRoot: procfs, CgroupRoot: cgroupRoot,
		ReconcileInterval: 50 * time.Millisecond, CollectInterval: 50 * time.Millisecond}, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := client.CoreV1().ConfigMaps("kube-system").Get(ctx, "n1-numa-info", metav1.GetOptions{}); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := client.CoreV1().ConfigMaps("kube-system").Get(ctx, "n1-numa-info", metav1.GetOptions{}); err != nil {
		t.Fatalf("koordlet stalled without the CRDs: %v", err)
	}
	time.Sleep(300 * time.Millisecond)
	if got := testutil.ToFloat64(a.metrics.errors.WithLabelValues("nodeslo")); got == 0 {
		t.Error("the unknown NodeSLO was not reported")
	}
	if b, _ := os.ReadFile(idle); string(b) != "1\n" {
		t.Errorf("besteffort cpu.idle %q with the NodeSLO unknown: a strategy wrote", b)
	}
	if b, _ := os.ReadFile(besteffortCPUs); string(b) != "3\n" {
		t.Errorf("besteffort cpuset %q with the NodeSLO unknown: BE suppression was undone", b)
	}
}
