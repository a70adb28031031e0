// Package compat applies Koordinator's own published examples (testdata:
// its documentation's and repository's sample manifests, each naming where
// it came from) unchanged to Koord: to a real kube-apiserver with strict
// field validation, as kubectl applies them, and then to the Koord
// component that reads each. It asserts what took effect and what was
// reported as kept but not acted on.
package compat

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	analysisv1alpha1 "github.com/koord-project/koord/apis/analysis/v1alpha1"
	colocationv1alpha1 "github.com/koord-project/koord/apis/colocation/v1alpha1"
	"github.com/koord-project/koord/apis/extension"
	"github.com/koord-project/koord/internal/controlplane"
	"github.com/koord-project/koord/manifests"
	"github.com/koord-project/koord/pkg/compat"
	"github.com/koord-project/koord/pkg/quota"
	"github.com/koord-project/koord/pkg/reservationutil"
	"github.com/koord-project/koord/pkg/slo/config"
	"github.com/koord-project/koord/pkg/slo/webhook/profile"
)

// expectation is what Koord makes of one corpus file.
type expectation struct {
	// keyError, when set, is part of the error koord-manager reports for a
	// key of the file's ConfigMap it cannot read (the example itself is
	// broken there); the other keys still take effect.
	keyError string
	// notActedOn are the fields reported as kept but not acted on.
	notActedOn []string
	// check asserts what took effect.
	check func(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane)
}

var anolis = map[string]string{"kubernetes.io/kernel": "anolis"}

var corpus = map[string]expectation{
	// koord-manager's pod webhook applies it to the documentation's own pod
	// and gets the pod the documentation shows.
	"docs-colocation-profile.yaml": {check: checkColocationProfile},
	// The recommender reads its target as written (its status is the
	// recommender's to write).
	"repo-sample-recommendation.yaml": {check: func(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane) {
		rec, err := cp.Koord.AnalysisV1alpha1().Recommendations("default").Get(ctx, "recommendation-sample", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if w := rec.Spec.Target.Workload; rec.Spec.Target.Type != analysisv1alpha1.RecommendationTargetWorkload || w == nil || w.Kind != "Deployment" || w.Name != "nginx-sample-deployment" || w.APIVersion != "apps/v1" {
			t.Errorf("target %+v", rec.Spec.Target)
		}
	}},
	// The template of every key. Its system-config is not JSON (a comma is
	// missing after clusterStrategy): Koordinator cannot read that key
	// either, and Koord reports it, naming it; as in Koordinator, the other
	// keys are read on their own, and take effect.
	"docs-slo-config-configmap.yaml": {
		keyError: "key system-config: invalid character",
		notActedOn: []string{"host-application-config", "spec.resourceQOSStrategy.*.memoryQOS.wmarkRatio", "spec.resourceQOSStrategy.*.memoryQOS.wmarkScalePermill",
			"spec.resourceQOSStrategy.*.memoryQOS.wmarkMinAdj", "spec.resourceQOSStrategy.*.memoryQOS.priorityEnable",
			"spec.resourceQOSStrategy.*.memoryQOS.priority", "spec.resourceQOSStrategy.*.memoryQOS.oomKillGroup",
			"spec.resourceQOSStrategy.*.resctrlQOS"},
		check: func(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane) {
			cm, err := cp.Client.CoreV1().ConfigMaps("koordinator-system").Get(ctx, "slo-controller-config", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			cfg, _ := config.Parse(cm)
			if len(cfg.Warnings) > 0 {
				t.Errorf("Koordinator's fields taken for typos: %v", cfg.Warnings)
			}
			if c := cfg.ColocationFor(anolis); c.UpdateTimeThresholdSeconds != 360 || c.ResourceDiffThreshold != 0.2 || c.Enable {
				t.Errorf("nodeConfigs for anolis nodes: %+v", c)
			}
			if th := cfg.NodeSLOFor(anolis).ResourceUsedThresholdWithBE; th == nil || *th.CPUEvictBEUsageThresholdPercent != 80 {
				t.Errorf("nodeStrategies for anolis nodes: %+v", th)
			}
			if th := cfg.NodeSLOFor(nil).ResourceUsedThresholdWithBE; th == nil || *th.CPUEvictBEUsageThresholdPercent != 90 || *th.MemoryEvictLowerPercent != 65 {
				t.Errorf("cluster strategy: %+v", th)
			}
		},
	},
	"docs-cpu-burst-configmap.yaml": {check: configMapLoads("koordinator-system", "slo-controller-config")},
	"docs-cpu-evict-configmap.yaml": {check: configMapLoads("koordinator-system", "slo-controller-config")},
	"docs-cpu-qos-configmap.yaml":   {check: configMapLoads("koordinator-system", "slo-controller-config")},
	// Core scheduling (Anolis): Koord uses group identity or cpu.idle.
	"docs-cpu-qos-configmap-2.yaml": {
		notActedOn: []string{"spec.resourceQOSStrategy.*.cpuQOS.coreExpeller", "spec.resourceQOSStrategy.policies.cpuPolicy=coreSched"},
		check:      configMapLoads("koordinator-system", "slo-controller-config"),
	},
	"docs-cpu-suppress-configmap.yaml": {check: configMapLoads("koordinator-system", "slo-controller-config")},
	"docs-host-application-configmap.yaml": {
		notActedOn: []string{"host-application-config"},
		check:      configMapLoads("koordinator-system", "slo-controller-config"),
	},
	"docs-memory-evict-configmap.yaml": {check: configMapLoads("koordinator-system", "slo-controller-config")},
	"docs-memory-qos-configmap.yaml":   {check: configMapLoads("koordinator-system", "slo-controller-config")},
	"repo-manager-slo-controller-config.yaml": {check: func(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane) {
		if cfg := parseConfigMap(t, ctx, cp, "system", "slo-controller-config"); !cfg.Colocation.Enable {
			t.Errorf("colocation not enabled: %+v", cfg.Colocation)
		}
	}},
	"repo-e2e-slo-controller-config.yaml": {check: func(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane) {
		cfg := parseConfigMap(t, ctx, cp, "koordinator-system", "slo-controller-config")
		if c := cfg.Colocation; !c.Enable || c.MemoryCalculatePolicy != config.CalculateByPodUsage {
			t.Errorf("colocation: %+v", c)
		}
	}},
	"docs-slo-config-nodeslo.yaml": {check: func(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane) {
		slo, err := cp.Koord.SloV1alpha1().NodeSLOs().Get(ctx, "test-node", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := slo.Spec.Validate(); err != nil {
			t.Errorf("koordlet refuses the NodeSLO: %v", err)
		}
		if th := slo.Spec.ResourceUsedThresholdWithBE; th == nil || !*th.Enable || *th.CPUSuppressThresholdPercent != 65 {
			t.Errorf("resourceUsedThresholdWithBE: %+v", th)
		}
	}},
	"repo-sample-nodemetric.yaml": {check: func(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane) {
		if _, err := cp.Koord.SloV1alpha1().NodeMetrics().Get(ctx, "nodemetric-sample", metav1.GetOptions{}); err != nil {
			t.Error(err)
		}
	}},
	"repo-sample-reservation.yaml": {check: reservationLoads("reservation-sample")},
	"docs-reservation.yaml":        {check: reservationLoads("reservation-demo")},
	"docs-reservation-big.yaml":    {check: reservationLoads("reservation-demo-big")},
	// Koordinator's own koord-scheduler configuration: it enables plugins
	// Koord does not have (DeviceShare, ...), which are left out and named;
	// the rest (Coscheduling and ElasticQuota with its args included)
	// schedules pods.
	"repo-manager-scheduler-config.yaml": {check: func(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane) {
		cm, err := cp.Client.CoreV1().ConfigMaps("system").Get(ctx, "scheduler-config", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sched, err := cp.StartScheduler(ctx, []byte(cm.Data["koord-scheduler-config"]))
		if err != nil {
			t.Fatalf("koord-scheduler refuses Koordinator's configuration: %v", err)
		}
		t.Cleanup(sched.Stop)
		if _, err := cp.CreateNode(ctx, controlplane.NodeSpec{Name: "sched-node", CPU: "8", Memory: "16Gi"}); err != nil {
			t.Fatal(err)
		}
		if err := cp.ReportNodeMetric(ctx, "sched-node", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("2Gi")}, time.Now()); err != nil {
			t.Fatal(err)
		}
		if _, err := cp.CreatePod(ctx, controlplane.PodSpec{Name: "koordinator-config-pod", CPU: "1", Memory: "1Gi", SchedulerName: "koord-scheduler"}); err != nil {
			t.Fatal(err)
		}
		if _, err := cp.WaitForPodBound(ctx, "default", "koordinator-config-pod", time.Minute); err != nil {
			t.Errorf("not scheduled under Koordinator's configuration: %v", err)
		}
	}},
	"docs-podgroup.yaml": {check: func(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane) {
		pg, err := cp.Koord.SchedulingSigsV1alpha1().PodGroups("default").Get(ctx, "gang-example", metav1.GetOptions{})
		if err != nil || pg.Spec.MinMember != 2 || *pg.Spec.ScheduleTimeoutSeconds != 100 {
			t.Errorf("PodGroup: %+v, %v", pg, err)
		}
	}},
	// Koordinator's gang annotations on a PodGroup: Coscheduling reads them
	// with the pods' parser.
	"docs-podgroup-2.yaml": {check: func(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane) {
		pg, err := cp.Koord.SchedulingSigsV1alpha1().PodGroups("default").Get(ctx, "gang-example1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		g, err := extension.GetGangSpec(map[string]string{extension.LabelPodGroup: pg.Name}, pg.Annotations)
		if err != nil || g.Mode != extension.GangModeNonStrict || g.TotalMember != 3 || len(g.Groups) != 2 || g.Groups[1] != "default/gang-example2" {
			t.Errorf("gang annotations on the PodGroup: %+v, %v", g, err)
		}
	}},
	"docs-elasticquota.yaml": {check: func(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane) {
		eq, err := cp.Koord.SchedulingSigsV1alpha1().ElasticQuotas("default").Get(ctx, "quota-example", metav1.GetOptions{})
		if err != nil || eq.Spec.Max.Cpu().Value() != 40 || eq.Spec.Min.Memory().String() != "20Mi" {
			t.Fatalf("ElasticQuota: %+v, %v", eq, err)
		}
		// The ElasticQuota plugin reads its tree keys as written: a top
		// quota (empty parent), a leaf.
		if q := quota.QuotaOf(eq); q.Err != nil || q.Parent != "" || q.IsParent || !q.AllowLent {
			t.Errorf("as the ElasticQuota plugin reads it: %+v", q)
		}
	}},
}

func configMapLoads(namespace, name string) func(*testing.T, context.Context, *controlplane.ControlPlane) {
	return func(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane) {
		parseConfigMap(t, ctx, cp, namespace, name)
	}
}

// parseConfigMap is koord-manager's reading of the ConfigMap: it must be
// accepted whole, with no field taken for a typo.
func parseConfigMap(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane, namespace, name string) config.Config {
	t.Helper()
	cm, err := cp.Client.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(cm)
	if err != nil {
		t.Fatalf("koord-manager refuses it: %v", err)
	}
	if len(cfg.Warnings) > 0 {
		t.Errorf("Koordinator's fields taken for typos: %v", cfg.Warnings)
	}
	return cfg
}

// reservationLoads reads the Reservation as koord-scheduler does and checks
// it names its owners and the resources to hold.
func reservationLoads(name string) func(*testing.T, context.Context, *controlplane.ControlPlane) {
	return func(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane) {
		r, err := cp.Koord.SchedulingV1alpha1().Reservations().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Spec.Owners) == 0 || r.Spec.Template == nil || len(r.Spec.Template.Spec.Containers) == 0 {
			t.Errorf("reservation %s: %+v", name, r.Spec)
		}
		if got := reservationutil.Requests(r); got.Cpu().IsZero() {
			t.Errorf("reservation %s holds no CPU: %v", name, got)
		}
	}
}

func TestKoordinatorExamples(t *testing.T) {
	cp, err := controlplane.Start(controlplane.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	for _, ns := range []string{"koordinator-system", "system"} {
		if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	files, err := filepath.Glob("testdata/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, path := range files {
		name := filepath.Base(path)
		if name == "koordinator-v1.8.0-values.yaml" {
			continue // a chart values file: test/chart renders the chart with it
		}
		seen[name] = true
		want, ok := corpus[name]
		if !ok {
			t.Errorf("%s: no expectation in corpus", name)
			continue
		}
		t.Run(name, func(t *testing.T) {
			objs := apply(t, ctx, cp, path)
			var got []string
			for _, o := range objs {
				n, err := notActedOn(o)
				if want.keyError != "" {
					if err == nil || !strings.Contains(err.Error(), want.keyError) {
						t.Errorf("want a key error %q, got %v", want.keyError, err)
					}
					err = nil
				}
				if err != nil {
					t.Fatalf("koord-manager refuses %s: %v", o.GetName(), err)
				}
				got = append(got, n...)
			}
			slices.Sort(got)
			wantNot := slices.Clone(want.notActedOn)
			slices.Sort(wantNot)
			if !slices.Equal(got, wantNot) {
				t.Errorf("reported as not acted on: %v\nwant %v", got, wantNot)
			}
			if want.check != nil {
				want.check(t, ctx, cp)
			}
		})
	}
	for name := range corpus {
		if !seen[name] {
			t.Errorf("corpus names %s, which testdata lacks", name)
		}
	}
}

// notActedOn is what the component reading o reports as kept but not acted
// on; an error is koord-manager refusing a ConfigMap.
func notActedOn(o *unstructured.Unstructured) ([]string, error) {
	switch o.GetKind() {
	case "ConfigMap":
		cm := &corev1.ConfigMap{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, cm); err != nil {
			return nil, err
		}
		cfg, err := config.Parse(cm)
		return cfg.NotActedOn, err
	case "NodeSLO":
		return compat.NotActedOnIn(compat.NodeSLO, o.Object), nil
	case "NodeMetric":
		return compat.NotActedOnIn(compat.NodeMetric, o.Object), nil
	case "Reservation":
		return compat.NotActedOnIn(compat.Reservation, o.Object), nil
	}
	return nil, nil
}

// apply creates every object of the file with strict field validation, as
// kubectl does by default: a field the CRD schema lacks is an error. Each is
// deleted when the test ends: the next file may hold the same object.
func apply(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane, path string) []*unstructured.Unstructured {
	t.Helper()
	manifest, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := cp.CreateStrict(ctx, manifest)
	t.Cleanup(func() {
		if err := cp.Delete(context.Background(), objs...); err != nil {
			t.Error(err)
		}
	})
	if err != nil {
		t.Fatalf("kubectl would refuse it: %v", err)
	}
	return objs
}

// apiCluster reads what a ClusterColocationProfile needs from the API server.
type apiCluster struct {
	ctx context.Context
	cp  *controlplane.ControlPlane
}

func (c apiCluster) Profiles() ([]*colocationv1alpha1.ClusterColocationProfile, error) {
	l, err := c.cp.Koord.ConfigV1alpha1().ClusterColocationProfiles().List(c.ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []*colocationv1alpha1.ClusterColocationProfile
	for i := range l.Items {
		out = append(out, &l.Items[i])
	}
	return out, nil
}

func (c apiCluster) NamespaceLabels(name string) (map[string]string, error) {
	ns, err := c.cp.Client.CoreV1().Namespaces().Get(c.ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return ns.Labels, nil
}

func (c apiCluster) PriorityClass(name string) (*schedulingv1.PriorityClass, error) {
	return c.cp.Client.SchedulingV1().PriorityClasses().Get(c.ctx, name, metav1.GetOptions{})
}

// checkColocationProfile: the documentation's pod (YAML block 1 of the same
// page), in a namespace the profile selects, comes out as the page shows it.
func checkColocationProfile(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane) {
	if err := cp.Apply(ctx, manifests.PriorityClasses); err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "colocation", Labels: map[string]string{"koordinator.sh/enable-colocation": "true"}}}
	if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "colocation", Name: "test-pod", Labels: map[string]string{"koordinator.sh/enable-colocation": "true"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.15.1", Resources: corev1.ResourceRequirements{
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("3456Mi")},
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("3456Mi")},
		}}}}}
	if _, err := (&profile.Mutator{Cluster: apiCluster{ctx: ctx, cp: cp}}).Apply(pod); err != nil {
		t.Fatal(err)
	}
	// What the page shows of the pod after creation.
	c := pod.Spec.Containers[0].Resources
	for k, want := range map[string]string{"koordinator.sh/qosClass": "BE", "koordinator.sh/priority": "1000", "koordinator.sh/mutated": "true"} {
		if pod.Labels[k] != want {
			t.Errorf("label %s = %q, want %q", k, pod.Labels[k], want)
		}
	}
	if pod.Annotations["koordinator.sh/intercepted"] != "true" || *pod.Spec.TerminationGracePeriodSeconds != 30 || *pod.Spec.Priority != 5000 ||
		pod.Spec.PriorityClassName != "koord-batch" || pod.Spec.SchedulerName != "koord-scheduler" {
		t.Errorf("pod %+v %+v", pod.ObjectMeta, pod.Spec)
	}
	for _, l := range []corev1.ResourceList{c.Limits, c.Requests} {
		cpu, mem := l[extension.BatchCPU], l[extension.BatchMemory]
		if len(l) != 2 || cpu.Value() != 1000 || mem.Cmp(resource.MustParse("3456Mi")) != 0 {
			t.Errorf("resources %v, want kubernetes.io/batch-cpu 1000 and batch-memory 3456Mi", l)
		}
	}
}
