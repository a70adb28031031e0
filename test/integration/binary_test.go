package integration

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/koord-project/koord/internal/controlplane"
	"github.com/koord-project/koord/manifests"
)

var (
	binaryOnce sync.Once
	binaryPath string
	binaryErr  error
)

// koordSchedulerBinary is the binary under test: $KOORD_SCHEDULER_BIN (make
// sets it to the bin/koord-scheduler it just built), else built here once.
func koordSchedulerBinary(t *testing.T) string {
	t.Helper()
	binaryOnce.Do(func() {
		if p := os.Getenv("KOORD_SCHEDULER_BIN"); p != "" {
			binaryPath, binaryErr = filepath.Abs(p)
			return
		}
		dir, err := os.MkdirTemp("", "koord-scheduler-bin-")
		if err != nil {
			binaryErr = err
			return
		}
		binaryPath = filepath.Join(dir, "koord-scheduler")
		out, err := exec.Command("go", "build", "-o", binaryPath, "github.com/koord-project/koord/cmd/koord-scheduler").CombinedOutput()
		if err != nil {
			binaryErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binaryErr != nil {
		t.Fatal(binaryErr)
	}
	return binaryPath
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
	rbac, err := manifests.RBAC.ReadFile("rbac/koord-scheduler.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := cp.Apply(ctx, rbac); err != nil {
		t.Fatalf("applying RBAC: %v", err)
	}
	tok, err := cp.Client.CoreV1().ServiceAccounts("koord-system").CreateToken(ctx, "koord-scheduler",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for the koord-scheduler ServiceAccount: %v", err)
	}
	saConfig := &rest.Config{Host: cp.Config.Host, BearerToken: tok.Status.Token, TLSClientConfig: rest.TLSClientConfig{
		CAData: cp.Config.CAData, ServerName: cp.Config.ServerName, Insecure: cp.Config.Insecure,
	}}
	kubeconfig := filepath.Join(t.TempDir(), "koord-scheduler.kubeconfig")
	if err := controlplane.WriteKubeconfig(saConfig, kubeconfig); err != nil {
		t.Fatal(err)
	}
	config, err := cp.SchedulerConfigFile(manifests.SchedulerConfig, kubeconfig, true)
	if err != nil {
		t.Fatal(err)
	}

	port := freePort(t)
	var out syncBuffer
	cmd := exec.Command(koordSchedulerBinary(t), "--config", config, fmt.Sprintf("--secure-port=%d", port), "--bind-address=127.0.0.1", "-v=2")
	cmd.Stdout, cmd.Stderr = &out, &out
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
			t.Logf("koord-scheduler output:\n%s", out.String())
		}
	})

	if _, err := cp.CreateNode(ctx, controlplane.NodeSpec{Name: "node-1", CPU: "4", Memory: "16Gi"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cp.CreatePod(ctx, controlplane.PodSpec{Name: "web", SchedulerName: "koord-scheduler", CPU: "500m", Memory: "256Mi"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cp.WaitForPodBound(ctx, "default", "web", 2*time.Minute); err != nil {
		t.Fatalf("%v\nkoord-scheduler output:\n%s", err, out.String())
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
