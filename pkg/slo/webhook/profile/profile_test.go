package profile

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	colocationv1alpha1 "github.com/koord-project/koord/apis/colocation/v1alpha1"
	"github.com/koord-project/koord/apis/extension"
)

type fakeCluster struct {
	profiles   []*colocationv1alpha1.ClusterColocationProfile
	namespaces map[string]map[string]string
	classes    map[string]int32
}

func (f *fakeCluster) Profiles() ([]*colocationv1alpha1.ClusterColocationProfile, error) {
	return f.profiles, nil
}

func (f *fakeCluster) NamespaceLabels(ns string) (map[string]string, error) {
	l, ok := f.namespaces[ns]
	if !ok {
		return nil, errors.New("not found")
	}
	return l, nil
}

func (f *fakeCluster) PriorityClass(name string) (*schedulingv1.PriorityClass, error) {
	v, ok := f.classes[name]
	if !ok {
		return nil, errors.New("priorityclass not found")
	}
	never := corev1.PreemptNever
	return &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: v, PreemptionPolicy: &never}, nil
}

func mustProfile(t *testing.T, y string) *colocationv1alpha1.ClusterColocationProfile {
	t.Helper()
	p := &colocationv1alpha1.ClusterColocationProfile{}
	if err := yaml.UnmarshalStrict([]byte(y), p); err != nil {
		t.Fatal(err)
	}
	return p
}

func mustPod(t *testing.T, y string) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{}
	if err := yaml.UnmarshalStrict([]byte(y), p); err != nil {
		t.Fatal(err)
	}
	return p
}

// Koordinator's user manual example ("Colocation Profile"): the profile,
// the pod, and the pod it documents coming out.
const docProfile = `
apiVersion: config.koordinator.sh/v1alpha1
kind: ClusterColocationProfile
metadata:
  name: colocation-profile-example
spec:
  namespaceSelector:
    matchLabels:
      koordinator.sh/enable-colocation: "true"
  selector:
    matchLabels:
      koordinator.sh/enable-colocation: "true"
  qosClass: BE
  priorityClassName: koord-batch
  koordinatorPriority: 1000
  schedulerName: koord-scheduler
  labels:
    koordinator.sh/mutated: "true"
  annotations:
    koordinator.sh/intercepted: "true"
  patch:
    spec:
      terminationGracePeriodSeconds: 30
`

const docPod = `
apiVersion: v1
kind: Pod
metadata:
  namespace: spark
  labels:
    koordinator.sh/enable-colocation: "true"
  name: test-pod
spec:
  containers:
  - name: app
    image: nginx:1.15.1
    resources:
        limits:
          cpu: "1"
          memory: "3456Mi"
        requests:
          cpu: "1"
          memory: "3456Mi"
`

func docCluster(t *testing.T, profiles ...string) *fakeCluster {
	c := &fakeCluster{
		namespaces: map[string]map[string]string{"spark": {"koordinator.sh/enable-colocation": "true"}, "web": {}},
		classes:    map[string]int32{"koord-batch": 5000, "koord-prod": 9000, "koord-mid": 7000},
	}
	for _, p := range profiles {
		c.profiles = append(c.profiles, mustProfile(t, p))
	}
	return c
}

func TestKoordinatorDocumentedExample(t *testing.T) {
	m := &Mutator{Cluster: docCluster(t, docProfile)}
	pod := mustPod(t, docPod)
	res, err := m.Apply(pod)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Mutated() || !res.Resources || len(res.Profiles) != 1 {
		t.Fatalf("result %+v", res)
	}
	want := mustPod(t, `
apiVersion: v1
kind: Pod
metadata:
  namespace: spark
  name: test-pod
  annotations:
    koordinator.sh/intercepted: "true"
  labels:
    koordinator.sh/enable-colocation: "true"
    koordinator.sh/qosClass: BE
    koordinator.sh/priority: "1000"
    koordinator.sh/mutated: "true"
spec:
  terminationGracePeriodSeconds: 30
  priority: 5000
  priorityClassName: koord-batch
  preemptionPolicy: Never
  schedulerName: koord-scheduler
  containers:
  - name: app
    image: nginx:1.15.1
    resources:
        limits:
          kubernetes.io/batch-cpu: "1000"
          kubernetes.io/batch-memory: 3456Mi
        requests:
          kubernetes.io/batch-cpu: "1000"
          kubernetes.io/batch-memory: 3456Mi
`)
	if d := cmp.Diff(want, pod); d != "" {
		t.Errorf("mutated pod (-want +got):\n%s", d)
	}
}

func TestSelection(t *testing.T) {
	cases := []struct {
		name, ns string
		labels   map[string]string
		want     bool
	}{
		{"namespace and pod selected", "spark", map[string]string{"koordinator.sh/enable-colocation": "true"}, true},
		{"namespace not selected", "web", map[string]string{"koordinator.sh/enable-colocation": "true"}, false},
		{"pod not selected", "spark", nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := &Mutator{Cluster: docCluster(t, docProfile)}
			pod := mustPod(t, docPod)
			pod.Namespace, pod.Labels = tc.ns, tc.labels
			before := pod.DeepCopy()
			res, err := m.Apply(pod)
			if err != nil {
				t.Fatal(err)
			}
			if res.Mutated() != tc.want {
				t.Fatalf("mutated %v, want %v", res.Mutated(), tc.want)
			}
			if !tc.want {
				if d := cmp.Diff(before, pod); d != "" {
					t.Errorf("a pod no profile selects was changed:\n%s", d)
				}
			}
		})
	}
}

func TestEmptySelectorsMatchEveryPod(t *testing.T) {
	m := &Mutator{Cluster: docCluster(t, `
metadata: {name: all}
spec:
  namespaceSelector: {}
  labels: {team: a}
`)}
	pod := mustPod(t, docPod)
	pod.Namespace = "nowhere" // not even readable: an empty selector does not look
	if _, err := m.Apply(pod); err != nil || pod.Labels["team"] != "a" {
		t.Fatalf("err %v labels %v", err, pod.Labels)
	}
}

func TestProbability(t *testing.T) {
	for _, tc := range []struct {
		prob  intstr.IntOrString
		draw  int
		apply bool
	}{
		{intstr.FromInt32(0), 0, false},
		{intstr.FromString("0%"), 0, false},
		{intstr.FromInt32(100), 99, true},
		{intstr.FromString("30%"), 29, true},
		{intstr.FromString("30%"), 30, false},
		{intstr.FromInt32(30), 10, true},
	} {
		p := mustProfile(t, `{"metadata":{"name":"p"},"spec":{"labels":{"drawn":"yes"}}}`)
		p.Spec.Probability = &tc.prob
		m := &Mutator{Cluster: &fakeCluster{profiles: []*colocationv1alpha1.ClusterColocationProfile{p}}, Intn: func(int) int { return tc.draw }}
		pod := mustPod(t, docPod)
		if _, err := m.Apply(pod); err != nil {
			t.Fatal(err)
		}
		if got := pod.Labels["drawn"] == "yes"; got != tc.apply {
			t.Errorf("probability %s, draw %d: applied %v, want %v", tc.prob.String(), tc.draw, got, tc.apply)
		}
	}
	bad := mustProfile(t, `{"metadata":{"name":"bad"},"spec":{"probability":"abc"}}`)
	m := &Mutator{Cluster: &fakeCluster{profiles: []*colocationv1alpha1.ClusterColocationProfile{bad}}}
	if _, err := m.Apply(mustPod(t, docPod)); err == nil || !strings.Contains(err.Error(), "ClusterColocationProfile bad: spec.probability") {
		t.Errorf("error %v, want one naming the profile and spec.probability", err)
	}
}

// Profiles apply in name order whatever order they are listed in: the last
// name's values win.
func TestOrder(t *testing.T) {
	c := docCluster(t,
		`{"metadata":{"name":"b"},"spec":{"labels":{"tier":"b"},"schedulerName":"sched-b"}}`,
		`{"metadata":{"name":"c"},"spec":{"labels":{"tier":"c"}}}`,
		`{"metadata":{"name":"a"},"spec":{"labels":{"tier":"a"},"schedulerName":"sched-a"}}`)
	pod := mustPod(t, docPod)
	res, err := (&Mutator{Cluster: c}).Apply(pod)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"a", "b", "c"}, res.Profiles); d != "" {
		t.Errorf("order %s", d)
	}
	if pod.Labels["tier"] != "c" || pod.Spec.SchedulerName != "sched-b" {
		t.Errorf("labels %v scheduler %s", pod.Labels, pod.Spec.SchedulerName)
	}
}

func TestMappingsAndSuffixes(t *testing.T) {
	c := docCluster(t, `
metadata: {name: m}
spec:
  labelKeysMapping: {app: app.kubernetes.io/name}
  annotationKeysMapping: {owner: example.com/owner}
  labelSuffixes: {app: -batch, missing: -x}
`)
	pod := mustPod(t, docPod)
	pod.Labels["app"] = "spark"
	pod.Annotations = map[string]string{"owner": "team-a"}
	if _, err := (&Mutator{Cluster: c}).Apply(pod); err != nil {
		t.Fatal(err)
	}
	// The copy is taken before the suffix is appended (Koordinator's order).
	if pod.Labels["app.kubernetes.io/name"] != "spark" || pod.Labels["app"] != "spark-batch" || pod.Annotations["example.com/owner"] != "team-a" {
		t.Errorf("labels %v annotations %v", pod.Labels, pod.Annotations)
	}
	if _, ok := pod.Labels["missing"]; ok {
		t.Errorf("a suffix created label missing")
	}
}

func TestResources(t *testing.T) {
	q := resource.MustParse
	cases := []struct {
		name    string
		profile string
		in      corev1.ResourceRequirements
		want    corev1.ResourceRequirements
	}{{
		name:    "mid pods move to mid resources",
		profile: `{"metadata":{"name":"mid"},"spec":{"qosClass":"LS","priorityClassName":"koord-mid"}}`,
		in:      corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": q("1500m"), "memory": q("1Gi")}},
		want:    corev1.ResourceRequirements{Requests: corev1.ResourceList{extension.MidCPU: q("1500"), extension.MidMemory: q("1Gi")}},
	}, {
		name:    "a limit only becomes the request too",
		profile: `{"metadata":{"name":"be"},"spec":{"qosClass":"BE","priorityClassName":"koord-batch"}}`,
		in:      corev1.ResourceRequirements{Limits: corev1.ResourceList{"cpu": q("2"), "memory": q("512Mi")}},
		want: corev1.ResourceRequirements{
			Limits:   corev1.ResourceList{extension.BatchCPU: q("2000"), extension.BatchMemory: q("512Mi")},
			Requests: corev1.ResourceList{extension.BatchCPU: q("2000"), extension.BatchMemory: q("512Mi")},
		},
	}, {
		name:    "a BE pod without a band counts as batch",
		profile: `{"metadata":{"name":"be"},"spec":{"qosClass":"BE"}}`,
		in:      corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": q("100m")}},
		want:    corev1.ResourceRequirements{Requests: corev1.ResourceList{extension.BatchCPU: q("100")}},
	}, {
		name:    "prod pods keep cpu and memory",
		profile: `{"metadata":{"name":"prod"},"spec":{"qosClass":"LS","priorityClassName":"koord-prod"}}`,
		in:      corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": q("1")}},
		want:    corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": q("1")}},
	}, {
		name:    "skip-update-resources keeps them",
		profile: `{"metadata":{"name":"be","annotations":{"config.koordinator.sh/skip-update-resources":""}},"spec":{"qosClass":"BE","priorityClassName":"koord-batch"}}`,
		in:      corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": q("1")}},
		want:    corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": q("1")}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := mustPod(t, docPod)
			pod.Spec.Containers[0].Resources = tc.in
			pod.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: *tc.in.DeepCopy()}}
			if _, err := (&Mutator{Cluster: docCluster(t, tc.profile)}).Apply(pod); err != nil {
				t.Fatal(err)
			}
			for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
				if d := cmp.Diff(tc.want, c.Resources, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); d != "" {
					t.Errorf("container %s (-want +got):\n%s", c.Name, d)
				}
			}
		})
	}
	t.Run("ColocationProfileSkipMutatingResources", func(t *testing.T) {
		pod := mustPod(t, docPod)
		if _, err := (&Mutator{Cluster: docCluster(t, docProfile), SkipResources: true}).Apply(pod); err != nil {
			t.Fatal(err)
		}
		if _, ok := pod.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; !ok {
			t.Errorf("resources moved: %v", pod.Spec.Containers[0].Resources)
		}
	})
}

func TestErrorsNameTheProfile(t *testing.T) {
	for _, tc := range []struct{ profile, want string }{
		{`{"metadata":{"name":"p1"},"spec":{"priorityClassName":"gone"}}`, "ClusterColocationProfile p1: spec.priorityClassName gone"},
		{`{"metadata":{"name":"p2"},"spec":{"selector":{"matchExpressions":[{"key":"a","operator":"Bogus"}]}}}`, "ClusterColocationProfile p2: spec.selector"},
		{`{"metadata":{"name":"p3"},"spec":{"patch":{"spec":{"containers":"not a list"}}}}`, "ClusterColocationProfile p3: spec.patch"},
	} {
		_, err := (&Mutator{Cluster: docCluster(t, tc.profile)}).Apply(mustPod(t, docPod))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want %q", err, tc.want)
		}
	}
}

func TestPatchIsStrategic(t *testing.T) {
	p := &colocationv1alpha1.ClusterColocationProfile{ObjectMeta: metav1.ObjectMeta{Name: "tol"}}
	p.Spec.Patch = runtime.RawExtension{Raw: []byte(`{"spec":{"tolerations":[{"key":"batch","operator":"Exists"}],"containers":[{"name":"app","env":[{"name":"MODE","value":"batch"}]}]}}`)}
	pod := mustPod(t, docPod)
	if _, err := (&Mutator{Cluster: &fakeCluster{profiles: []*colocationv1alpha1.ClusterColocationProfile{p}}}).Apply(pod); err != nil {
		t.Fatal(err)
	}
	c := pod.Spec.Containers[0]
	if len(pod.Spec.Tolerations) != 1 || c.Image != "nginx:1.15.1" || len(c.Env) != 1 {
		t.Errorf("containers are merged by name, not replaced: %+v tolerations %v", c, pod.Spec.Tolerations)
	}
}

// FuzzApply: a profile (an operator's, but checked only by a webhook that
// may be down) and a pod (a tenant's) of any shape: Apply changes the pod or
// returns an error naming the profile; never a panic.
func FuzzApply(f *testing.F) {
	f.Add([]byte(docProfile), []byte(docPod))
	f.Add([]byte(`{"metadata":{"name":"p"},"spec":{"patch":{"spec":{"containers":[{"name":"app","resources":{"limits":{"cpu":"1"}}}]}},"qosClass":"BE"}}`), []byte(`{"spec":{"containers":[{"name":"app"}],"overhead":{"cpu":"100m"}}}`))
	f.Add([]byte(`{"metadata":{"name":"p"},"spec":{"probability":"50%","labelSuffixes":{"a":"b"},"labelKeysMapping":{"x":"y"}}}`), []byte(`{"metadata":{"labels":{"a":"1"}}}`))
	f.Fuzz(func(t *testing.T, profileJSON, podJSON []byte) {
		p := &colocationv1alpha1.ClusterColocationProfile{}
		pod := &corev1.Pod{}
		if yaml.Unmarshal(profileJSON, p) != nil || yaml.Unmarshal(podJSON, pod) != nil {
			return
		}
		p.Name = "fuzzed"
		pod.Namespace = "spark"
		c := docCluster(t)
		c.profiles = []*colocationv1alpha1.ClusterColocationProfile{p}
		if _, err := (&Mutator{Cluster: c, Intn: func(int) int { return 0 }}).Apply(pod); err != nil && !strings.Contains(err.Error(), "fuzzed") && !strings.Contains(err.Error(), "namespace spark") {
			t.Fatalf("error does not name the profile: %v", err)
		}
	})
}
