package security

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/koord-project/koord/internal/controlplane"
	"github.com/koord-project/koord/manifests"
)

// Objects the typed decoders refuse, stored as a looser CRD schema of the
// past would have let them be: a Reservation with ttl "banana" and a
// NodeMetric with an aggregation window "banana". Today's CRDs refuse both
// at write; these are the ones already in etcd.
const (
	bananaReservation = `{"apiVersion":"scheduling.koordinator.sh/v1alpha1","kind":"Reservation",
"metadata":{"name":"banana","uid":"0b0b0b0b-0000-4000-8000-000000000001","creationTimestamp":"2026-01-01T00:00:00Z"},
"spec":{"ttl":"banana","owners":[{"object":{"namespace":"default","name":"x"}}],
"template":{"spec":{"containers":[{"name":"c","image":"pause","resources":{"requests":{"cpu":"1"}}}]}}}}`
	bananaNodeMetric = `{"apiVersion":"slo.koordinator.sh/v1alpha1","kind":"NodeMetric",
"metadata":{"name":"ghost","uid":"0b0b0b0b-0000-4000-8000-000000000002","creationTimestamp":"2026-01-01T00:00:00Z"},
"spec":{"metricCollectPolicy":{"nodeAggregatePolicy":{"durations":["banana"]}}}}`
)

// One bad object stalls nobody: koord-scheduler starts and schedules other
// pods within 10 s, and koord-manager's cache syncs and its controllers
// work, each reporting the object it skipped.
func TestBadObjectsStallNothing(t *testing.T) {
	ctx := testContext(t)
	cp, err := controlplane.Start(controlplane.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	if err := cp.PutStored(ctx, "scheduling.koordinator.sh/reservations/banana", []byte(bananaReservation)); err != nil {
		t.Fatal(err)
	}
	if err := cp.PutStored(ctx, "slo.koordinator.sh/nodemetrics/ghost", []byte(bananaNodeMetric)); err != nil {
		t.Fatal(err)
	}
	// Today's CRD refuses the object at write, naming the field.
	fresh := strings.Replace(strings.Replace(bananaReservation, `"banana"`, `"banana2"`, 1), `"uid":"0b0b0b0b-0000-4000-8000-000000000001",`, "", 1)
	err = cp.Koord.SchedulingV1alpha1().RESTClient().Post().Resource("reservations").Body([]byte(fresh)).Do(ctx).Error()
	if err == nil || !strings.Contains(err.Error(), "spec.ttl") {
		t.Errorf("creating a Reservation with ttl banana: %v, want refused naming spec.ttl", err)
	}
	// Once the API server's cache has them, the typed client cannot list.
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := cp.Koord.SchedulingV1alpha1().Reservations().List(ctx, metav1.ListOptions{})
		return err != nil, nil
	})
	if err != nil {
		t.Fatal("the typed client lists the reservations: the bad one does not reproduce what broke the caches")
	}
	if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "koord-system"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cp.CreateNode(ctx, controlplane.NodeSpec{Name: "n1", CPU: "8", Memory: "16Gi"}); err != nil {
		t.Fatal(err)
	}

	sched, err := cp.StartScheduler(ctx, manifests.SchedulerConfig)
	if err != nil {
		t.Fatalf("koord-scheduler did not start beside a bad object: %v", err)
	}
	t.Cleanup(sched.Stop)
	if _, err := cp.CreatePod(ctx, controlplane.PodSpec{Name: "web", CPU: "1", Memory: "1Gi", SchedulerName: "koord-scheduler"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cp.WaitForPodBound(ctx, "default", "web", 10*time.Second); err != nil {
		t.Errorf("a pod waited past 10 s beside a bad Reservation and NodeMetric: %v", err)
	}

	startManager(t, ctx, cp)
	// Its controllers run: n1 gets the NodeMetric koord-manager creates.
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := cp.Koord.SloV1alpha1().NodeMetrics().Get(ctx, "n1", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Errorf("koord-manager created no NodeMetric for n1 beside bad objects: %v", err)
	}
}
