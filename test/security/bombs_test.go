package security

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/koord-project/koord/apis/extension"
	"github.com/koord-project/koord/internal/controlplane"
	"github.com/koord-project/koord/internal/topologytest"
	"github.com/koord-project/koord/manifests"
)

// bomb is a quantity resource.ParseQuantity spends about a second on (more
// digits, super-linearly more); every component decoding it used to stall
// its watch behind it.
const bomb = "1e-9999999"

// storeBombs puts obj, of kind apiVersion/kind, straight into etcd (as a
// looser schema of the past would have let it be written) with field
// replaced by value.
func storeBombs(t *testing.T, ctx context.Context, c *cluster, key, apiVersion, kind string, obj any, field string, value any) {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	delete(m["metadata"].(map[string]any), "resourceVersion")
	m["apiVersion"], m["kind"], m[field] = apiVersion, kind, value
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := c.PutStored(ctx, key, b); err != nil {
		t.Fatal(err)
	}
}

// waitInvalidObject waits for the Event a component records when it skips
// an object that does not decode, naming what was wrong.
func waitInvalidObject(t *testing.T, ctx context.Context, c *cluster, name, want string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		events, err := c.Client.EventsV1().Events("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, e := range events.Items {
			if e.Reason == "InvalidObject" && e.Regarding.Name == name && strings.Contains(e.Note, want) {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Errorf("no InvalidObject Event for %s saying %q within 10 s", name, want)
	}
}

// Quantity bombs: refused at write by every CRD's schema, naming the field
// (a koordlet writing its own NodeMetric, a PodGroup's minResources); and,
// already stored, skipped in microseconds by koord-scheduler and
// koord-manager, each naming the field in an Event, while an unrelated pod
// binds. Twenty of them in one NodeMetric used to hold every other watch
// event for half a minute and more.
func TestQuantityBombsStallNothing(t *testing.T) {
	ctx := testContext(t)
	c := start(t, ctx)
	_, koord := koordletOn(t, ctx, c, "n1")
	status := fmt.Sprintf(`{"status":{"updateTime":%q,"nodeMetric":{"nodeUsage":{"resources":{"cpu":%q}}}}}`, time.Now().UTC().Format(time.RFC3339), bomb)
	err := koord.SloV1alpha1().RESTClient().Patch(types.MergePatchType).Resource("nodemetrics").Name("n1").SubResource("status").Body([]byte(status)).Do(ctx).Error()
	refused(t, "koordlet of n1 writing a quantity bomb into its NodeMetric", err, "status.nodeMetric.nodeUsage.resources.cpu")
	pg := fmt.Sprintf(`{"apiVersion":"scheduling.sigs.k8s.io/v1alpha1","kind":"PodGroup","metadata":{"name":"bomb"},"spec":{"minMember":1,"minResources":{"cpu":%q}}}`, bomb)
	err = c.Koord.SchedulingSigsV1alpha1().RESTClient().Post().Namespace("tenant").Resource("podgroups").Body([]byte(pg)).Do(ctx).Error()
	refused(t, "a PodGroup with a quantity bomb", err, "spec.minResources.cpu")

	// Stored before the schema bounded them: n2's NodeMetric with twenty
	// bombs, and a PodGroup with one.
	reportIdle(t, ctx, c.ControlPlane, "n1", "n2")
	nm, err := c.Koord.SloV1alpha1().NodeMetrics().Get(ctx, "n2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var pods []any
	for i := range 20 {
		pods = append(pods, map[string]any{"namespace": "x", "name": fmt.Sprint("p", i), "podUsage": map[string]any{"resources": map[string]any{"cpu": bomb}}})
	}
	storeBombs(t, ctx, c, "slo.koordinator.sh/nodemetrics/n2", "slo.koordinator.sh/v1alpha1", "NodeMetric", nm, "status", map[string]any{"updateTime": time.Now().UTC().Format(time.RFC3339), "podsMetric": pods})
	stored := map[string]any{"metadata": map[string]any{"name": "stored", "namespace": "tenant", "uid": "0b0b0b0b-0000-4000-8000-000000000003", "creationTimestamp": "2026-01-01T00:00:00Z"}}
	storeBombs(t, ctx, c, "scheduling.sigs.k8s.io/podgroups/tenant/stored", "scheduling.sigs.k8s.io/v1alpha1", "PodGroup", stored, "spec", map[string]any{"minMember": 2, "minResources": map[string]any{"cpu": bomb, "memory": bomb}})

	sched, err := c.StartScheduler(ctx, manifests.SchedulerConfig)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sched.Stop)
	startManager(t, ctx, c.ControlPlane)
	waitInvalidObject(t, ctx, c, "n2", "status.podsMetric")
	waitInvalidObject(t, ctx, c, "stored", "spec.minResources")
	if _, err := c.CreatePod(ctx, controlplane.PodSpec{Name: "web", CPU: "1", Memory: "1Gi", SchedulerName: "koord-scheduler"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitForPodBound(ctx, "default", "web", 10*time.Second); err != nil {
		t.Errorf("a pod waited past 10 s beside stored quantity bombs: %v", err)
	}

	// While they run: n1's NodeMetric gets its bombs through the watch.
	nm, err = c.Koord.SloV1alpha1().NodeMetrics().Get(ctx, "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	storeBombs(t, ctx, c, "slo.koordinator.sh/nodemetrics/n1", "slo.koordinator.sh/v1alpha1", "NodeMetric", nm, "status", map[string]any{"updateTime": time.Now().UTC().Format(time.RFC3339), "podsMetric": pods})
	waitInvalidObject(t, ctx, c, "n1", "quantity \""+bomb+"\" has an exponent of 7 digits")
	if _, err := c.CreatePod(ctx, controlplane.PodSpec{Name: "api", CPU: "1", Memory: "1Gi", SchedulerName: "koord-scheduler"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitForPodBound(ctx, "default", "api", 10*time.Second); err != nil {
		t.Errorf("a pod waited past 10 s after a quantity bomb came through the watch: %v", err)
	}
}

// A node's koordlet rewrites its numa-info with 16,000 CPUs whose every
// shared pool and kubelet pin names all of them (about 1 MB): one parse of
// it took 35 s, inside the informer's handler, so every other node's
// topology waited behind it. Now the lists are capped by the CPUs (no two
// entries share one), it is refused in milliseconds naming the key, and
// parsed outside the handler, its latest version only: a CPU-binding pod
// that only n2 can take binds while n1 keeps writing.
func TestHostileNUMAInfoStallsNothing(t *testing.T) {
	ctx := testContext(t)
	c := start(t, ctx)
	client, _ := koordletOn(t, ctx, c, "n1")
	reportIdle(t, ctx, c.ControlPlane, "n1", "n2")
	sched, err := c.StartScheduler(ctx, manifests.SchedulerConfig)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sched.Stop)
	n1, err := c.Client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	write := func(rev int) error {
		cm, err := extension.NewNUMAInfoConfigMap("n1", topologytest.Hostile(16000, 2500, rev))
		if err != nil {
			return err
		}
		cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "n1", UID: n1.UID}}
		cms := client.CoreV1().ConfigMaps(extension.NUMAInfoNamespace)
		if cur, err := cms.Get(ctx, cm.Name, metav1.GetOptions{}); err == nil {
			cm.ResourceVersion = cur.ResourceVersion
			_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
			return err
		}
		_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
		return err
	}
	if err := write(0); err != nil {
		t.Fatalf("koordlet of n1 publishing its (hostile) numa-info: %v", err)
	}
	writing, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for rev := 1; writing.Err() == nil; rev++ {
			_ = write(rev)
			time.Sleep(300 * time.Millisecond)
		}
	}()
	defer func() { stop(); <-done }()
	time.Sleep(time.Second) // a few versions queue up first

	if err := c.PublishNUMAInfo(ctx, "n2", topologytest.Linux(1, 1, 4, 2, 8<<30)); err != nil {
		t.Fatal(err)
	}
	binds := map[string]string{extension.AnnotationResourceSpec: `{"preferredCPUBindPolicy":"FullPCPUs"}`}
	if _, err := c.CreatePod(ctx, controlplane.PodSpec{Name: "db", CPU: "2", Memory: "1Gi", Guaranteed: true, SchedulerName: "koord-scheduler",
		Labels: map[string]string{extension.LabelPodQoS: "LSR"}, Annotations: binds}); err != nil {
		t.Fatal(err)
	}
	pod, err := c.WaitForPodBound(ctx, "default", "db", 15*time.Second)
	if err != nil {
		t.Fatalf("an LSR pod waited past 15 s for n2's topology while n1 wrote a hostile one: %v", err)
	}
	if pod.Spec.NodeName != "n2" {
		t.Errorf("the LSR pod went to %s, want n2 (n1's topology is refused)", pod.Spec.NodeName)
	}
	// n1 cannot bind CPUs, and says why.
	stop()
	<-done
	pinned, err := controlplane.MakePod(controlplane.PodSpec{Name: "pinned", CPU: "2", Memory: "1Gi", Guaranteed: true, SchedulerName: "koord-scheduler",
		Labels: map[string]string{extension.LabelPodQoS: "LSR"}, Annotations: binds})
	if err != nil {
		t.Fatal(err)
	}
	pinned.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": "n1"}
	if _, err := c.Client.CoreV1().Pods("default").Create(ctx, pinned, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var msg string
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := c.Client.CoreV1().Pods("default").Get(ctx, "pinned", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		msg = fmt.Sprintf("node %q, %s", p.Spec.NodeName, controlplane.PodUnschedulableMessage(p))
		return strings.Contains(msg, "n1-numa-info") && strings.Contains(msg, "both list CPU"), nil
	})
	if err != nil {
		t.Errorf("a pod pinned to n1: %q, want its numa-info's error (entries that share a CPU)", msg)
	}
}
