package integration

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	colocationv1alpha1 "github.com/koord-project/koord/apis/colocation/v1alpha1"
	"github.com/koord-project/koord/apis/extension"
	"github.com/koord-project/koord/internal/controlplane"
	"github.com/koord-project/koord/manifests"
	"github.com/koord-project/koord/pkg/slo/config"
	"github.com/koord-project/koord/pkg/slo/webhook/certs"
)

// servedSerial is the serial number of the certificate koord-manager's
// webhook server presents now.
func servedSerial(port int) string {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", fmt.Sprintf("127.0.0.1:%d", port), &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		return ""
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

// bin/koord-manager's admission webhooks, called by a real API server over
// TLS, with the shipped RBAC: a ClusterColocationProfile turns a plain pod
// into a BE pod on batch resources that koord-scheduler places by batch
// capacity; an LSR pod asking for part of a CPU is refused with the rule,
// dry run or not; the certificate koord-manager issued itself is renewed
// while it runs and the webhook keeps answering; with koord-manager down,
// pods are admitted as they are (failurePolicy Ignore).
func TestWebhooks(t *testing.T) {
	ctx := testContext(t)
	cp := startControlPlane(t, controlplane.Options{RBAC: true})
	kubeconfig := serviceAccountKubeconfig(t, ctx, cp, "koord-manager")
	if err := cp.Apply(ctx, manifests.PriorityClasses); err != nil {
		t.Fatal(err)
	}
	setSLOConfig(t, ctx, cp, map[string]string{config.ColocationKey: `{"enable": true}`})
	for _, ns := range []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: "spark", Labels: map[string]string{"koordinator.sh/enable-colocation": "true"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "web"}},
	} {
		if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Koordinator's documented profile.
	profile := &colocationv1alpha1.ClusterColocationProfile{ObjectMeta: metav1.ObjectMeta{Name: "colocation-profile-example"},
		Spec: colocationv1alpha1.ClusterColocationProfileSpec{
			NamespaceSelector:   &metav1.LabelSelector{MatchLabels: map[string]string{"koordinator.sh/enable-colocation": "true"}},
			QoSClass:            "BE",
			PriorityClassName:   "koord-batch",
			KoordinatorPriority: ptr.To[int32](1000),
			SchedulerName:       "koord-scheduler",
			Labels:              map[string]string{"koordinator.sh/mutated": "true"},
		}}
	if _, err := cp.Koord.ConfigV1alpha1().ClusterColocationProfiles().Create(ctx, profile, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	mwc, vwc := controlplane.WebhookConfigurations(port)
	if _, err := cp.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, mwc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cp.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, vwc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Two nodes: one reports its load, so koord-manager gives it batch
	// capacity (8 × 60 % − 1 core of system = 3.8 cores); one has none.
	for _, n := range []string{"wh-batch", "wh-none"} {
		if _, err := cp.CreateNode(ctx, controlplane.NodeSpec{Name: n, CPU: "8", Memory: "32Gi"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := cp.ReportNodeMetric(ctx, "wh-batch", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("4Gi")}, time.Now()); err != nil {
		t.Fatal(err)
	}

	// Two replicas, as the chart runs: the first takes the lease and writes
	// the certificate; the second serves the same one from the Secret.
	startReplica := func(port int) (stop func(), out *syncBuffer) {
		out = &syncBuffer{}
		cmd := exec.Command(commandBinary(t, "koord-manager", "KOORD_MANAGER_BIN"), "--kubeconfig="+kubeconfig, "--namespace=koord-system",
			"--metrics-addr=0", fmt.Sprintf("--health-addr=127.0.0.1:%d", freePort(t)),
			fmt.Sprintf("--webhook-port=%d", port), "--webhook-host=127.0.0.1", "--webhook-hosts=127.0.0.1",
			// Renewed every 20 s or so: the test sees renewals.
			"--webhook-cert-validity=30s", "-v=2")
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			if t.Failed() {
				t.Logf("koord-manager (webhook port %d) output:\n%s", port, out.String())
			}
		})
		return func() { _ = cmd.Process.Signal(syscall.SIGTERM); <-exited }, out
	}
	stopFirst, out := startReplica(port)
	waitBatch(t, ctx, cp, "wh-batch", 3800, -1)
	// koord-manager has written its CA into both configurations.
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		m, err1 := cp.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, mwc.Name, metav1.GetOptions{})
		v, err2 := cp.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, vwc.Name, metav1.GetOptions{})
		return err1 == nil && err2 == nil && len(m.Webhooks[0].ClientConfig.CABundle) > 0 && len(v.Webhooks[3].ClientConfig.CABundle) > 0 && servedSerial(port) != "", nil
	})
	if err != nil {
		t.Fatalf("no CA bundle injected or no certificate served: %v", err)
	}
	port2 := freePort(t)
	stopSecond, out2 := startReplica(port2)
	sameCert := func(what string) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			a, b := servedSerial(port), servedSerial(port2)
			return a != "" && a == b, nil
		})
		if err != nil {
			t.Fatalf("%s: the replicas serve %q and %q, want the Secret's certificate on both", what, servedSerial(port), servedSerial(port2))
		}
	}
	sameCert("at start")

	// The Secret lives as long as the configurations it serves (garbage
	// collection deletes it with them at uninstall).
	secret, err := cp.Client.CoreV1().Secrets("koord-system").Get(ctx, "koord-webhook-certs", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if owners := secret.OwnerReferences; len(owners) != 2 || owners[0].Name != mwc.Name || owners[1].Name != vwc.Name {
		t.Errorf("Secret owners %v, want the two webhook configurations", owners)
	}
	startScheduler(t, ctx, cp, manifests.SchedulerConfig)

	// A pod written for stock Kubernetes, in the profiled namespace.
	mutated := func(name string, cpu string) *corev1.Pod {
		t.Helper()
		p, err := controlplane.MakePod(controlplane.PodSpec{Namespace: "spark", Name: name, CPU: cpu, Memory: "1Gi", Guaranteed: true})
		if err != nil {
			t.Fatal(err)
		}
		got, err := cp.Client.CoreV1().Pods("spark").Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	pod := mutated("spark-driver", "2")
	res := pod.Spec.Containers[0].Resources
	if pod.Labels[extension.LabelPodQoS] != "BE" || pod.Labels[extension.LabelPodPriority] != "1000" || pod.Spec.SchedulerName != "koord-scheduler" ||
		pod.Spec.Priority == nil || *pod.Spec.Priority != 5000 || pod.Spec.PriorityClassName != "koord-batch" {
		t.Fatalf("pod not turned into a BE pod: labels %v scheduler %q priority %v (%s)", pod.Labels, pod.Spec.SchedulerName, pod.Spec.Priority, pod.Spec.PriorityClassName)
	}
	batchCPU, batchMem := res.Requests[extension.BatchCPU], res.Limits[extension.BatchMemory]
	if _, ok := res.Requests[corev1.ResourceCPU]; ok || batchCPU.Value() != 2000 || batchMem.Value() != 1<<30 {
		t.Fatalf("resources %v: want batch-cpu 2000 and batch-memory 1Gi in place of cpu and memory", res)
	}
	bound, err := cp.WaitForPodBound(ctx, "spark", "spark-driver", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if bound.Spec.NodeName != "wh-batch" {
		t.Errorf("placed on %s, want wh-batch, the only node with batch capacity", bound.Spec.NodeName)
	}
	// 2 + 2 cores of 3.8 do not fit: the second waits.
	mutated("spark-exec", "2")
	time.Sleep(3 * time.Second)
	if p, _ := cp.Client.CoreV1().Pods("spark").Get(ctx, "spark-exec", metav1.GetOptions{}); p.Spec.NodeName != "" {
		t.Errorf("spark-exec placed on %s beyond the node's batch capacity", p.Spec.NodeName)
	}
	// A pod in a namespace no profile selects is not touched.
	plain, err := cp.CreatePod(ctx, controlplane.PodSpec{Namespace: "web", Name: "web", CPU: "1", Memory: "1Gi"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := plain.Labels[extension.LabelPodQoS]; ok || plain.Spec.Containers[0].Resources.Requests.Cpu().IsZero() {
		t.Errorf("a pod no profile selects was changed: %v %v", plain.Labels, plain.Spec.Containers[0].Resources)
	}

	// The validating webhook refuses an LSR pod asking for part of a CPU,
	// naming the rule, and answers a dry run the same way.
	lsr, _ := controlplane.MakePod(controlplane.PodSpec{Namespace: "web", Name: "lsr", CPU: "1500m", Memory: "1Gi", Guaranteed: true,
		Labels: map[string]string{extension.LabelPodQoS: "LSR"}, PriorityClassName: "koord-prod"})
	for _, dry := range [][]string{nil, {metav1.DryRunAll}} {
		_, err := cp.Client.CoreV1().Pods("web").Create(ctx, lsr, metav1.CreateOptions{DryRun: dry})
		if err == nil || !strings.Contains(err.Error(), "an LSR pod must request a whole number of CPUs") {
			t.Errorf("dry run %v: %v, want refused naming the rule", dry, err)
		}
	}
	// And an slo-controller-config it would not accept.
	cm, err := cp.Client.CoreV1().ConfigMaps("koord-system").Get(ctx, config.ConfigMapName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data[config.ColocationKey] = `{"enable": true, "cpuReclaimThresholdPercent": "most"}`
	if _, err := cp.Client.CoreV1().ConfigMaps("koord-system").Update(ctx, cm, metav1.UpdateOptions{}); err == nil || !strings.Contains(err.Error(), "key colocation-config") {
		t.Errorf("invalid slo-controller-config: %v, want refused naming the key", err)
	}

	// The certificate is renewed while koord-manager runs; the webhook keeps
	// answering with the new one (a pod is mutated: with Ignore, a failed
	// TLS handshake would have let it through untouched).
	first := servedSerial(port)
	err = wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, false, func(context.Context) (bool, error) {
		s := servedSerial(port)
		return s != "" && s != first, nil
	})
	if err != nil {
		t.Fatalf("the serving certificate %s was not renewed within a minute of a 30 s lifetime", first)
	}
	if p := mutated("after-renewal", "1"); p.Labels[extension.LabelPodQoS] != "BE" {
		t.Errorf("after the renewal the pod was not mutated: %v", p.Labels)
	}
	sameCert("after a renewal")
	for _, o := range []*syncBuffer{out, out2} {
		if strings.Contains(o.String(), "is forbidden") {
			t.Errorf("the shipped RBAC is missing a permission:\n%s", grepLines(o.String(), "is forbidden"))
		}
	}

	// The leader stops; the other replica takes the lease and renews in
	// its turn, from the same CA (the caBundle stays as it was).
	bundle := func() string {
		m, _ := cp.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, mwc.Name, metav1.GetOptions{})
		return string(m.Webhooks[0].ClientConfig.CABundle)
	}
	caBefore := bundle()
	stopFirst()
	second := servedSerial(port2)
	err = wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, false, func(context.Context) (bool, error) {
		s := servedSerial(port2)
		return s != "" && s != second, nil
	})
	if err != nil {
		t.Fatalf("after the leader left, nobody renewed the certificate %s", second)
	}
	if caBefore != bundle() {
		t.Error("the new leader issued a new CA: it must carry on with the Secret's")
	}

	// koord-manager down: pods are admitted as they are.
	stopSecond()
	if p := mutated("while-down", "1"); p.Labels[extension.LabelPodQoS] != "" {
		t.Errorf("mutated with koord-manager down: %v", p.Labels)
	}
	if _, err := cp.Client.CoreV1().Pods("web").Create(ctx, lsr, metav1.CreateOptions{}); err != nil {
		t.Errorf("with koord-manager down the LSR pod was refused: %v", err)
	}
}

// With --webhook-cert-source=secret (the chart's manager.webhook.certManager)
// cert-manager owns the Secret and the CA bundle: koord-manager serves the
// Secret's certificate, follows it when cert-manager renews it, and writes
// neither. The test plays cert-manager.
func TestWebhookCertFromSecret(t *testing.T) {
	ctx := testContext(t)
	cp := startControlPlane(t, controlplane.Options{})
	if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "koord-system"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	issue := func() map[string][]byte {
		data, _, err := certs.Renew(nil, []string{"127.0.0.1"}, time.Hour, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		delete(data, certs.KeyCAKey) // cert-manager's Secret has no CA key
		return data
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "koord-system", Name: "koord-webhook-certs"}, Type: corev1.SecretTypeTLS, Data: issue()}
	secret, err := cp.Client.CoreV1().Secrets("koord-system").Create(ctx, secret, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	mwc, vwc := controlplane.WebhookConfigurations(port)
	for i := range mwc.Webhooks {
		mwc.Webhooks[i].ClientConfig.CABundle = secret.Data[certs.KeyCACert]
	}
	if _, err := cp.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, mwc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cp.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, vwc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var out syncBuffer
	cmd := exec.Command(commandBinary(t, "koord-manager", "KOORD_MANAGER_BIN"), "--kubeconfig="+cp.Kubeconfig, "--namespace=koord-system",
		"--metrics-addr=0", fmt.Sprintf("--health-addr=127.0.0.1:%d", freePort(t)), fmt.Sprintf("--webhook-port=%d", port),
		"--webhook-host=127.0.0.1", "--webhook-cert-source=secret", "-v=2")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("koord-manager output:\n%s", out.String())
		}
	})
	serves := func(data map[string][]byte) {
		t.Helper()
		want, err := certs.Serving(data)
		if err != nil {
			t.Fatal(err)
		}
		if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			return servedSerial(port) == want.Leaf.SerialNumber.String(), nil
		}); err != nil {
			t.Fatalf("serving %q, want the Secret's certificate %s", servedSerial(port), want.Leaf.SerialNumber)
		}
	}
	serves(secret.Data)
	// cert-manager renews: the new certificate is served without a restart.
	secret.Data = issue()
	if secret, err = cp.Client.CoreV1().Secrets("koord-system").Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	serves(secret.Data)
	// Nothing of cert-manager's was written.
	got, err := cp.Client.CoreV1().Secrets("koord-system").Get(ctx, secret.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.ResourceVersion != secret.ResourceVersion {
		t.Error("koord-manager wrote cert-manager's Secret")
	}
	v, err := cp.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, vwc.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Webhooks[0].ClientConfig.CABundle) != 0 {
		t.Error("koord-manager injected a CA bundle where cert-manager's injector does")
	}
}
