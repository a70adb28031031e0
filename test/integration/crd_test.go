package integration

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/koord-project/koord/apis/extension"
	schedulingv1alpha1 "github.com/koord-project/koord/apis/scheduling/v1alpha1"
	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
	"github.com/koord-project/koord/internal/controlplane"
)

// Objects exactly as Koordinator users write them; they must be accepted
// unchanged and read back through our typed clients.
const koordinatorNodeMetric = `
apiVersion: slo.koordinator.sh/v1alpha1
kind: NodeMetric
metadata:
  name: node-1
spec:
  metricCollectPolicy:
    aggregateDurationSeconds: 300
    reportIntervalSeconds: 60
    nodeAggregatePolicy:
      durations: ["5m0s", "10m0s", "30m0s"]
status:
  updateTime: "2026-11-29T10:00:00Z"
  nodeMetric:
    nodeUsage:
      resources: {cpu: 1500m, memory: 2Gi}
    systemUsage:
      resources: {cpu: 200m, memory: 512Mi}
    aggregatedNodeUsages:
      - duration: 5m0s
        usage:
          p90: {resources: {cpu: "2", memory: 3Gi}}
          avg: {resources: {cpu: 1200m, memory: 2Gi}}
    numaUsages:
      - numaNodeID: 0
        nodeUsage: {resources: {cpu: "1", memory: 1Gi}}
  podsMetric:
    - namespace: default
      name: web-0
      priority: koord-prod
      qos: LS
      podUsage: {resources: {cpu: 500m, memory: 1Gi}}
      extensions: {runqLatencyP99Seconds: 0.002}
`

const koordinatorReservation = `
apiVersion: scheduling.koordinator.sh/v1alpha1
kind: Reservation
metadata:
  name: reserve-web
spec:
  template:
    metadata:
      namespace: default
    spec:
      containers:
        - name: main
          image: nginx
          resources:
            requests: {cpu: "2", memory: 4Gi}
      schedulerName: koord-scheduler
  owners:
    - object: {name: web-0, namespace: default}
    - controller:
        apiVersion: apps/v1
        kind: StatefulSet
        name: web
        uid: 0a1b2c3d
        namespace: default
    - labelSelector:
        matchLabels: {app: web}
  allocatePolicy: Aligned
  taints:
    - {key: dedicated, value: web, effect: NoSchedule}
`

func createUnstructured(t *testing.T, dyn dynamic.Interface, gvr schema.GroupVersionResource, doc string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
		t.Fatal(err)
	}
	created, err := dyn.Resource(gvr).Create(testContext(t), obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating %s: %v", gvr.Resource, err)
	}
	return created
}

func TestCRDsAcceptKoordinatorObjects(t *testing.T) {
	ctx := testContext(t)
	cp := startControlPlane(t, controlplane.Options{})
	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("NodeMetric", func(t *testing.T) {
		gvr := slov1alpha1.SchemeGroupVersion.WithResource("nodemetrics")
		created := createUnstructured(t, dyn, gvr, koordinatorNodeMetric)
		// status is a subresource: write it as koordlet does.
		full := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(koordinatorNodeMetric), &full.Object); err != nil {
			t.Fatal(err)
		}
		created.Object["status"] = full.Object["status"]
		if _, err := dyn.Resource(gvr).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("updating status: %v", err)
		}
		nm, err := cp.Koord.SloV1alpha1().NodeMetrics().Get(ctx, "node-1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := nm.Status.NodeMetric.NodeUsage.Cpu(); got.Cmp(resource.MustParse("1500m")) != 0 {
			t.Errorf("nodeUsage cpu = %s", got)
		}
		agg := nm.Status.NodeMetric.AggregatedNodeUsages[0]
		p90 := agg.Usage[slov1alpha1.P90]
		if mem := p90.Memory(); agg.Duration.Duration != 5*time.Minute || mem.Cmp(resource.MustParse("3Gi")) != 0 {
			t.Errorf("aggregated usage = %+v", agg)
		}
		if len(nm.Status.NodeMetric.NUMAUsages) != 1 {
			t.Errorf("numaUsages lost: %+v", nm.Status.NodeMetric)
		}
		pm := nm.Status.PodsMetric[0]
		if pm.Priority != extension.PriorityProd || pm.QoS != extension.QoSLS || pm.Extensions == nil || !strings.Contains(string(pm.Extensions.Raw), "runqLatencyP99Seconds") {
			t.Errorf("podsMetric = %+v", pm)
		}
		if *nm.Spec.CollectPolicy.ReportIntervalSeconds != 60 || len(nm.Spec.CollectPolicy.NodeAggregatePolicy.Durations) != 3 {
			t.Errorf("collect policy = %+v", nm.Spec.CollectPolicy)
		}
	})

	t.Run("Reservation", func(t *testing.T) {
		gvr := schedulingv1alpha1.SchemeGroupVersion.WithResource("reservations")
		createUnstructured(t, dyn, gvr, koordinatorReservation)
		r, err := cp.Koord.SchedulingV1alpha1().Reservations().Get(ctx, "reserve-web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if cpu := r.Spec.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; cpu.Cmp(resource.MustParse("2")) != 0 {
			t.Errorf("template lost its requests: %+v", r.Spec.Template.Spec.Containers)
		}
		if len(r.Spec.Owners) != 3 || r.Spec.Owners[0].Object.Name != "web-0" || r.Spec.Owners[1].Controller.Kind != "StatefulSet" ||
			r.Spec.Owners[1].Controller.Namespace != "default" || r.Spec.Owners[2].LabelSelector.MatchLabels["app"] != "web" {
			t.Errorf("owners = %+v", r.Spec.Owners)
		}
		// Defaults Koordinator users rely on.
		if r.Spec.AllocateOnce == nil || !*r.Spec.AllocateOnce {
			t.Errorf("allocateOnce not defaulted to true: %v", r.Spec.AllocateOnce)
		}
		if r.Spec.TTL == nil || r.Spec.TTL.Duration != 24*time.Hour {
			t.Errorf("ttl not defaulted to 24h: %v", r.Spec.TTL)
		}
		if r.Spec.AllocatePolicy != schedulingv1alpha1.ReservationAllocatePolicyAligned || len(r.Spec.Taints) != 1 {
			t.Errorf("spec = %+v", r.Spec)
		}

		r.Status = schedulingv1alpha1.ReservationStatus{
			Phase:       schedulingv1alpha1.ReservationAvailable,
			NodeName:    "node-1",
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
			Conditions: []schedulingv1alpha1.ReservationCondition{{
				Type: schedulingv1alpha1.ReservationConditionScheduled, Status: corev1.ConditionTrue, Reason: schedulingv1alpha1.ReasonReservationScheduled,
			}},
		}
		if _, err := cp.Koord.SchedulingV1alpha1().Reservations().UpdateStatus(ctx, r, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("status update: %v", err)
		}
	})

	t.Run("Reservation validation", func(t *testing.T) {
		cases := map[string]struct{ doc, want string }{
			"no template": {`
apiVersion: scheduling.koordinator.sh/v1alpha1
kind: Reservation
metadata: {name: no-template}
spec:
  owners: [{labelSelector: {matchLabels: {app: web}}}]
`, "spec.template: Required value"},
			"no owners": {`
apiVersion: scheduling.koordinator.sh/v1alpha1
kind: Reservation
metadata: {name: no-owners}
spec:
  template: {spec: {containers: [{name: c, image: x}]}}
  owners: []
`, "spec.owners"},
			"bad allocate policy": {`
apiVersion: scheduling.koordinator.sh/v1alpha1
kind: Reservation
metadata: {name: bad-policy}
spec:
  template: {spec: {containers: [{name: c, image: x}]}}
  owners: [{labelSelector: {matchLabels: {app: web}}}]
  allocatePolicy: Sometimes
`, "spec.allocatePolicy"},
		}
		gvr := schedulingv1alpha1.SchemeGroupVersion.WithResource("reservations")
		for name, tc := range cases {
			obj := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(tc.doc), &obj.Object); err != nil {
				t.Fatal(err)
			}
			_, err := dyn.Resource(gvr).Create(ctx, obj, metav1.CreateOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: got %v, want an error mentioning %q", name, err, tc.want)
			}
		}
	})

	t.Run("NodeSLO", func(t *testing.T) {
		gvr := slov1alpha1.SchemeGroupVersion.WithResource("nodeslos")
		createUnstructured(t, dyn, gvr, `
apiVersion: slo.koordinator.sh/v1alpha1
kind: NodeSLO
metadata: {name: node-1}
spec:
  resourceUsedThresholdWithBE: {enable: true, cpuSuppressThresholdPercent: 65, cpuSuppressPolicy: cpuset, memoryEvictThresholdPercent: 70}
  resourceQOSStrategy:
    lsrClass: {cpuQOS: {enable: true, groupIdentity: 2}}
    beClass: {cpuQOS: {enable: true, groupIdentity: -1}, memoryQOS: {enable: true, wmarkRatio: 95}}
  cpuBurstStrategy: {policy: auto, cpuBurstPercent: 1000, cfsQuotaBurstPercent: 300, sharePoolThresholdPercent: 50}
`)
		slo, err := cp.Koord.SloV1alpha1().NodeSLOs().Get(ctx, "node-1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if *slo.Spec.ResourceUsedThresholdWithBE.CPUSuppressThresholdPercent != 65 ||
			*slo.Spec.ResourceQOSStrategy.BEClass.CPUQOS.GroupIdentity != -1 ||
			slo.Spec.CPUBurstStrategy.Policy != slov1alpha1.CPUBurstAuto || *slo.Spec.CPUBurstStrategy.SharePoolThresholdPercent != 50 {
			t.Errorf("spec = %+v", slo.Spec)
		}
		bad := `
apiVersion: slo.koordinator.sh/v1alpha1
kind: NodeSLO
metadata: {name: node-2}
spec:
  resourceUsedThresholdWithBE: {cpuSuppressThresholdPercent: 165}
`
		obj := &unstructured.Unstructured{}
		_ = yaml.Unmarshal([]byte(bad), &obj.Object)
		if _, err := dyn.Resource(gvr).Create(ctx, obj, metav1.CreateOptions{}); err == nil || !strings.Contains(err.Error(), "cpuSuppressThresholdPercent") {
			t.Errorf("a 165%% threshold was not rejected naming the field: %v", err)
		}
	})
}
