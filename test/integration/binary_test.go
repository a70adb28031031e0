package integration

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/koord-project/koord/apis/extension"
	schedulingsigsv1alpha1 "github.com/koord-project/koord/apis/schedulingsigs/v1alpha1"
	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
	"github.com/koord-project/koord/internal/controlplane"
	"github.com/koord-project/koord/internal/koordlettest"
	"github.com/koord-project/koord/manifests"
	"github.com/koord-project/koord/pkg/client/koordclient"
)

var (
	binaryMu   sync.Mutex
	binaryPath = map[string]string{}
)

// commandBinary is cmd/<name> under test: $<ENV> (make sets it to the binary
// it just built in bin/), else built here once per test run.
func commandBinary(t *testing.T, name, env string) string {
	t.Helper()
	binaryMu.Lock()
	defer binaryMu.Unlock()
	if p, ok := binaryPath[name]; ok {
		return p
	}
	if p := os.Getenv(env); p != "" {
		abs, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		binaryPath[name] = abs
		return abs
	}
	dir, err := os.MkdirTemp("", name+"-bin-")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if out, err := exec.Command("go", "build", "-o", path, "github.com/koord-project/koord/cmd/"+name).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	binaryPath[name] = path
	return path
}

func koordSchedulerBinary(t *testing.T) string {
	return commandBinary(t, "koord-scheduler", "KOORD_SCHEDULER_BIN")
}

// syncBuffer collects a process's output while it runs.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}
func (b *syncBuffer) String() string { b.mu.Lock(); defer b.mu.Unlock(); return b.buf.String() }

// runComponent starts a built component with args until the test ends:
// then it gets SIGTERM (and is killed 30 s later), and its output is logged
// if the test failed. exited gets what cmd.Wait returned; a test that reads
// it puts it back.
func runComponent(t *testing.T, bin string, args ...string) (*exec.Cmd, *syncBuffer, chan error) {
	t.Helper()
	out := &syncBuffer{}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", filepath.Base(bin), out.String())
		}
	})
	return cmd, out, exited
}

// exitsOnSIGTERM sends a component SIGTERM and wants it to exit cleanly
// within 30 s (exited is fed by cmd.Wait).
func exitsOnSIGTERM(t *testing.T, name string, cmd *exec.Cmd, exited <-chan error) {
	t.Helper()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("%s exited with %v after SIGTERM", name, err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not exit on SIGTERM", name)
	}
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func TestBinaryVersion(t *testing.T) {
	out, err := exec.Command(koordSchedulerBinary(t), "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("--version: %v\n%s", err, out)
	}
	if s := string(out); !strings.HasPrefix(s, "koord-scheduler ") || !strings.Contains(s, "Kubernetes v1.37.2") {
		t.Errorf("--version printed %q; want the Koord version and Kubernetes v1.37.2", s)
	}
}

func TestBinaryRejectsInvalidArgs(t *testing.T) {
	config := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(config, []byte(loadAwareConfig("{estimatedScalingFactors: {cpu: 0}}")), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(koordSchedulerBinary(t), "--config", config).CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("koord-scheduler accepted invalid args (err %v):\n%s", err, out)
	}
	if !strings.Contains(string(out), "estimatedScalingFactors[cpu]") {
		t.Errorf("exit message does not name the field:\n%s", out)
	}
}

// TestBinaryWithShippedConfigAndRBAC runs bin/koord-scheduler as operators
// do: the shipped KubeSchedulerConfiguration (leader election on), the
// shipped RBAC and nothing more (an API server with RBAC authorization), its
// secure port serving /healthz.
func TestBinaryWithShippedConfigAndRBAC(t *testing.T) {
	ctx := testContext(t)
	cp := startControlPlane(t, controlplane.Options{RBAC: true})
	kubeconfig := serviceAccountKubeconfig(t, ctx, cp, "koord-scheduler")
	config, err := cp.SchedulerConfigFile(manifests.SchedulerConfig, kubeconfig, true)
	if err != nil {
		t.Fatal(err)
	}

	port := freePort(t)
	// With Koordinator's gate names, as a Koordinator deployment passes them.
	cmd, out, exited := runComponent(t, koordSchedulerBinary(t), "--config", config, fmt.Sprintf("--secure-port=%d", port), "--bind-address=127.0.0.1", "-v=2",
		"--feature-gates=PodMutatingWebhook=true,SyncBarrier=true,BatchResource=true")

	if _, err := cp.CreateNode(ctx, controlplane.NodeSpec{Name: "node-1", CPU: "4", Memory: "16Gi"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cp.CreatePod(ctx, controlplane.PodSpec{Name: "web", SchedulerName: "koord-scheduler", CPU: "500m", Memory: "256Mi"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cp.WaitForPodBound(ctx, "default", "web", 2*time.Minute); err != nil {
		t.Fatalf("%v\nkoord-scheduler output:\n%s", err, out.String())
	}
	// The shipped profile places gangs: a PodGroup of two binds whole.
	if _, err := cp.Koord.SchedulingSigsV1alpha1().PodGroups("default").Create(ctx, &schedulingsigsv1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "pair"},
		Spec: schedulingsigsv1alpha1.PodGroupSpec{MinMember: 2}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"pair-0", "pair-1"} {
		if _, err := cp.CreatePod(ctx, controlplane.PodSpec{Name: name, SchedulerName: "koord-scheduler", CPU: "500m", Memory: "256Mi",
			Labels: map[string]string{extension.LabelPodGroup: "pair"}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"pair-0", "pair-1"} {
		if _, err := cp.WaitForPodBound(ctx, "default", name, 2*time.Minute); err != nil {
			t.Fatalf("gang member %s: %v\nkoord-scheduler output:\n%s", name, err, out.String())
		}
	}

	lease, err := cp.Client.CoordinationV1().Leases("kube-system").Get(ctx, "koord-scheduler", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("leader election lease: %v", err)
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		t.Errorf("lease kube-system/koord-scheduler has no holder")
	}

	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d/healthz", port))
	if err != nil {
		t.Fatalf("/healthz: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz = %d", resp.StatusCode)
	}
	if strings.Contains(out.String(), "is forbidden") {
		t.Errorf("the shipped RBAC is missing a permission:\n%s", grepLines(out.String(), "is forbidden"))
	}
	if !strings.Contains(grepLines(out.String(), "Koord does not implement"), "SyncBarrier") {
		t.Error("the Koordinator gate it does not implement (SyncBarrier) was not reported")
	}

	// A SIGTERM ends it cleanly and gives up the lease for the next replica.
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		exited <- err
	case <-time.After(30 * time.Second):
		t.Fatal("koord-scheduler did not exit on SIGTERM")
	}
	lease, err = cp.Client.CoordinationV1().Leases("kube-system").Get(context.Background(), "koord-scheduler", metav1.GetOptions{})
	if err == nil && lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "" {
		t.Errorf("lease still held by %q after shutdown", *lease.Spec.HolderIdentity)
	}
}

func grepLines(s, substr string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// serviceAccountKubeconfig applies the shipped manifests/rbac/<name>.yaml and
// returns a kubeconfig with a token of its ServiceAccount koord-system/<name>:
// what the component gets in a cluster.
func serviceAccountKubeconfig(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane, name string) string {
	t.Helper()
	rbac, err := manifests.RBAC.ReadFile("rbac/" + name + ".yaml")
	if err != nil {
		t.Fatal(err)
	}
	// The shipped RBAC lives in the namespace Koord is installed in; Helm
	// creates it (--create-namespace), here the test does.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "koord-system"}}
	if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if err := cp.Apply(ctx, rbac); err != nil {
		t.Fatalf("applying RBAC: %v", err)
	}
	tok, err := cp.Client.CoreV1().ServiceAccounts("koord-system").CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for the %s ServiceAccount: %v", name, err)
	}
	saConfig := &rest.Config{Host: cp.Config.Host, BearerToken: tok.Status.Token, TLSClientConfig: rest.TLSClientConfig{
		CAData: cp.Config.CAData, ServerName: cp.Config.ServerName, Insecure: cp.Config.Insecure,
	}}
	kubeconfig := filepath.Join(t.TempDir(), name+".kubeconfig")
	if err := controlplane.WriteKubeconfig(saConfig, kubeconfig); err != nil {
		t.Fatal(err)
	}
	return kubeconfig
}

// bin/koordlet with the shipped RBAC, against an API server enforcing
// Node,RBAC authorization: it publishes its node's numa-info ConfigMap and
// NodeMetric, serves /healthz and /metrics, and exits cleanly on SIGTERM.
func TestKoordletBinaryWithShippedRBAC(t *testing.T) {
	ctx := testContext(t)
	cp := startControlPlane(t, controlplane.Options{RBAC: true})
	kubeconfig := serviceAccountKubeconfig(t, ctx, cp, "koordlet")
	if _, err := cp.CreateNode(ctx, controlplane.NodeSpec{Name: "bin-1", CPU: "16", Memory: "16Gi"}); err != nil {
		t.Fatal(err)
	}
	// The shipped RBAC does not let koordlet create NodeMetrics: that is
	// koord-manager's.
	saConfig, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	asKoordlet, err := koordclient.New(saConfig)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := asKoordlet.SloV1alpha1().NodeMetrics().Create(ctx, &slov1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: "bin-1"}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("koordlet creating a NodeMetric: %v, want Forbidden", err)
	}
	if err := cp.CreateNodeMetric(ctx, "bin-1"); err != nil {
		t.Fatal(err)
	}
	fixture, sysfs := koordlettest.NewNode(t, [4]int{1, 2, 4, 2}, 8<<30)
	fixture.SimulateLoad(t, ctx, 3)

	port := freePort(t)
	var out syncBuffer
	cmd := exec.Command(commandBinary(t, "koordlet", "KOORDLET_BIN"), "--node-name=bin-1", "--kubeconfig="+kubeconfig,
		"--sysfs-root="+sysfs, "--procfs-root="+fixture.Procfs, "--cgroup-root="+fixture.CgroupRoot, "--kubelet-root-dir="+t.TempDir(),
		"--collect-interval=100ms", fmt.Sprintf("--metrics-addr=127.0.0.1:%d", port), "--metrics-secure", "-v=2",
		"--feature-gates=RdtResctrl=false,BECPUSuppress=true")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		if t.Failed() {
			t.Logf("koordlet output:\n%s", out.String())
		}
	})

	waitNUMAInfo(t, ctx, cp, "bin-1", nil)
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		nm, err := cp.Koord.SloV1alpha1().NodeMetrics().Get(ctx, "bin-1", metav1.GetOptions{})
		return err == nil && nm.Status.NodeMetric != nil, nil
	})
	if err != nil {
		t.Fatalf("no NodeMetric status for bin-1: %v", err)
	}
	// --metrics-secure: HTTPS, /healthz open to kubelet's probe, /metrics
	// only to a token the API server says may GET /metrics.
	reader := metricsReaderToken(t, ctx, cp)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	for _, tc := range []struct {
		path, token string
		status      int
		want        string
	}{
		{"/healthz", "", http.StatusOK, "ok"},
		{"/metrics", "", http.StatusUnauthorized, ""},
		{"/metrics", reader, http.StatusOK, "koordlet_numa_info_syncs_total"},
		{"/metrics", reader, http.StatusOK, `koord_feature_gate_not_implemented{gate="RdtResctrl"} 0`},
	} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d%s", port, tc.path), nil)
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || !strings.Contains(string(body), tc.want) {
			t.Errorf("%s with token %v = %d, want %d and a body with %q", tc.path, tc.token != "", resp.StatusCode, tc.status, tc.want)
		}
	}
	if strings.Contains(out.String(), "forbidden") {
		t.Errorf("the shipped RBAC is missing a permission:\n%s", grepLines(out.String(), "forbidden"))
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("koordlet exited with %v after SIGTERM", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("koordlet did not exit on SIGTERM")
	}
}

// metricsReaderToken is the token of a ServiceAccount bound to the shipped
// koord-metrics-reader ClusterRole, as a Prometheus would be.
func metricsReaderToken(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane) string {
	t.Helper()
	rbac, err := manifests.RBAC.ReadFile("rbac/koord-manager.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := cp.Apply(ctx, rbac); err != nil {
		t.Fatal(err)
	}
	if _, err := cp.Client.CoreV1().ServiceAccounts("koord-system").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "prometheus"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "prometheus-koord-metrics"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "koord-metrics-reader"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "koord-system", Name: "prometheus"}}}
	if _, err := cp.Client.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tok, err := cp.Client.CoreV1().ServiceAccounts("koord-system").CreateToken(ctx, "prometheus", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tok.Status.Token
}
