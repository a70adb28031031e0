package compat_test

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	configv1 "github.com/koord-project/koord/apis/config/v1"
	deschedulerv1alpha2 "github.com/koord-project/koord/apis/descheduler/v1alpha2"
	"github.com/koord-project/koord/apis/extension"
	schedulingv1alpha1 "github.com/koord-project/koord/apis/scheduling/v1alpha1"
	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
	"github.com/koord-project/koord/pkg/compat"
	"github.com/koord-project/koord/pkg/slo/config"
)

func TestDocIsCurrent(t *testing.T) {
	got, err := os.ReadFile("../../docs/compatibility.md")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != compat.Markdown() {
		t.Error("docs/compatibility.md is stale: run go run ./hack/compatdoc > docs/compatibility.md")
	}
}

// Every entry names a field the object's schema has: the table cannot
// describe a field that does not exist.
func TestFieldsExist(t *testing.T) {
	types := map[string]reflect.Type{
		compat.NodeSLO:                 reflect.TypeFor[slov1alpha1.NodeSLO](),
		compat.NodeMetric:              reflect.TypeFor[slov1alpha1.NodeMetric](),
		compat.Reservation:             reflect.TypeFor[schedulingv1alpha1.Reservation](),
		compat.LoadAwareArgs:           reflect.TypeFor[configv1.LoadAwareSchedulingArgs](),
		compat.ReservationArgs:         reflect.TypeFor[configv1.ReservationArgs](),
		compat.CoschedulingArgs:        reflect.TypeFor[configv1.CoschedulingArgs](),
		compat.ElasticQuotaArgs:        reflect.TypeFor[configv1.ElasticQuotaArgs](),
		compat.PodMigrationJob:         reflect.TypeFor[schedulingv1alpha1.PodMigrationJob](),
		compat.DeschedulerConfig:       reflect.TypeFor[deschedulerv1alpha2.DeschedulerConfiguration](),
		compat.LowNodeLoadArgs:         reflect.TypeFor[deschedulerv1alpha2.LowNodeLoadArgs](),
		compat.MigrationControllerArgs: reflect.TypeFor[deschedulerv1alpha2.MigrationControllerArgs](),
		compat.SLOControllerConfig: reflect.StructOf([]reflect.StructField{
			{Name: "Colocation", Type: reflect.TypeFor[config.Colocation](), Tag: `json:"colocation-config"`},
			{Name: "HostApplication", Type: reflect.TypeFor[map[string]any](), Tag: `json:"host-application-config"`},
			{Name: "CPUNormalization", Type: reflect.TypeFor[map[string]any](), Tag: `json:"cpu-normalization-config"`},
			{Name: "ResourceAmplification", Type: reflect.TypeFor[map[string]any](), Tag: `json:"resource-amplification-config"`},
		}),
	}
	annotations := map[string]reflect.Type{extension.AnnotationResourceSpec: reflect.TypeFor[extension.ResourceSpec](),
		extension.AnnotationNUMATopologySpec: reflect.TypeFor[extension.NUMATopologySpec]()}
	for _, f := range compat.Fields {
		if f.Object == compat.NodeAnnotation || f.Object == compat.PodLabel || f.Object == compat.SchedulerPlugin {
			continue // names, not schema paths
		}
		if f.Object == compat.PodAnnotation {
			found := false
			for key, typ := range annotations {
				if rest, ok := strings.CutPrefix(f.Path, key+"."); ok {
					found = hasPath(typ, strings.Split(rest, "."))
				}
			}
			if !found {
				t.Errorf("%s %s: no such annotation field", f.Object, f.Path)
			}
			continue
		}
		typ, ok := types[f.Object]
		if !ok {
			t.Errorf("%s: unknown object", f.Name())
			continue
		}
		path := strings.Split(f.Path, ".")
		// colocation-config's nodeConfigs entries carry the cluster fields.
		if f.Object == compat.SLOControllerConfig && len(path) > 2 && path[1] == "nodeConfigs" {
			path = append(path[:1], path[3:]...)
		}
		if !hasPath(typ, path) {
			t.Errorf("%s %s: no such field", f.Object, f.Path)
		}
	}
}

func hasPath(t reflect.Type, path []string) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if len(path) == 0 {
		return true
	}
	switch t.Kind() {
	case reflect.Map, reflect.Slice:
		if path[0] != "*" {
			return t.Kind() == reflect.Map && t.Elem().Kind() == reflect.Interface
		}
		return hasPath(t.Elem(), path[1:])
	case reflect.Interface:
		return true
	case reflect.Struct:
		if path[0] == "*" {
			// Any field of the struct (QoS classes).
			for i := range t.NumField() {
				if hasPath(t.Field(i).Type, path[1:]) {
					return true
				}
			}
			return false
		}
		for i := range t.NumField() {
			sf := t.Field(i)
			name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
			if name == "" && sf.Anonymous {
				if hasPath(sf.Type, path) {
					return true
				}
				continue
			}
			if name == path[0] {
				return hasPath(sf.Type, path[1:])
			}
		}
	}
	return false
}

func TestNotActedOnIn(t *testing.T) {
	f := false
	slo := &slov1alpha1.NodeSLO{Spec: slov1alpha1.NodeSLOSpec{
		ResourceQOSStrategy: &slov1alpha1.ResourceQOSStrategy{
			LSClass: &slov1alpha1.ResourceQOS{CPUQOS: &slov1alpha1.CPUQOSCfg{Enable: &f}, NetworkQOS: &slov1alpha1.NetworkQOSCfg{Enable: &f}},
		},
		ResourceUsedThresholdWithBE: &slov1alpha1.ResourceThresholdStrategy{CPUEvictPolicy: slov1alpha1.EvictByRealLimitPolicy},
		HostApplications:            []slov1alpha1.HostApplicationSpec{{Name: "nginx"}},
	}}
	got := compat.NotActedOnIn(compat.NodeSLO, slo)
	want := []string{"spec.resourceQOSStrategy.*.networkQOS", "spec.hostApplications"}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v (evictByRealLimit is what Koord does)", got, want)
	}
	slo.Spec.ResourceUsedThresholdWithBE.CPUEvictPolicy = slov1alpha1.EvictByAllocatablePolicy
	if got := compat.NotActedOnIn(compat.NodeSLO, slo); !slices.Contains(got, "spec.resourceUsedThresholdWithBE.cpuEvictPolicy=evictByAllocatable") {
		t.Errorf("evictByAllocatable not reported: %v", got)
	}
	if got := compat.NotActedOnIn(compat.NodeSLO, &slov1alpha1.NodeSLO{}); len(got) != 0 {
		t.Errorf("an empty NodeSLO sets nothing: %v", got)
	}
	r := &schedulingv1alpha1.Reservation{Spec: schedulingv1alpha1.ReservationSpec{PreAllocation: true}}
	if got := compat.NotActedOnIn(compat.Reservation, r); !slices.Equal(got, []string{"spec.preAllocation"}) {
		t.Errorf("reservation: %v", got)
	}
}

// Each field is reported once per object: one Event and the metric.
func TestReporter(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	reg := prometheus.NewRegistry()
	r := compat.NewReporter("test", rec, reg)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "koord-system", Name: "slo-controller-config", UID: "u1"}}
	for range 3 {
		r.NotActedOn(cm, compat.SLOControllerConfig, []string{"host-application-config"})
		r.Unknown(cm, compat.SLOControllerConfig, []string{`colocation-config: unknown field "enabled"`})
	}
	if len(rec.Events) != 2 {
		t.Fatalf("want 2 events, got %d", len(rec.Events))
	}
	for _, want := range []string{"Warning UnsupportedField slo-controller-config sets host-application-config", `Warning UnknownField slo-controller-config sets colocation-config: unknown field "enabled"`} {
		if e := <-rec.Events; !strings.HasPrefix(e, want) {
			t.Errorf("event %q, want it to start %q", e, want)
		}
	}
	if n := testutil.CollectAndCount(reg, "koord_test_unsupported_field"); n != 2 {
		t.Errorf("metric series: %d, want 2", n)
	}
	// A new object under the same name is reported afresh, and so is one
	// forgotten (deleted).
	cm2 := cm.DeepCopy()
	cm2.UID = "u1-again"
	r.NotActedOn(cm2, compat.SLOControllerConfig, []string{"host-application-config"})
	r.Forget(compat.SLOControllerConfig, "koord-system", "slo-controller-config")
	r.NotActedOn(cm2, compat.SLOControllerConfig, []string{"host-application-config"})
	if len(rec.Events) != 2 {
		t.Errorf("want 2 more events (new UID, then forgotten), got %d", len(rec.Events))
	}
	for len(rec.Events) > 0 {
		<-rec.Events
	}
	// A second reporter of the component shares the metric.
	compat.NewReporter("test", rec, reg).NotActedOn(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{UID: "u2"}}, compat.SLOControllerConfig, []string{"cpu-normalization-config"})
	if n := testutil.CollectAndCount(reg, "koord_test_unsupported_field"); n != 3 {
		t.Errorf("metric series: %d, want 3", n)
	}
}

// NotActedOnIn reads objects tenants and nodes write: any JSON, or none,
// must give an answer, never a panic.
func FuzzNotActedOnIn(f *testing.F) {
	f.Add([]byte(`{"spec":{"resourceQOSStrategy":{"lsClass":{"blkioQOS":{"enable":true}}},"hostApplications":[{}]}}`))
	f.Add([]byte(`{"spec":{"resourceQOSStrategy":[1,{"x":null}]}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, object := range []string{compat.NodeSLO, compat.NodeMetric, compat.Reservation, compat.SLOControllerConfig} {
			for _, name := range compat.NotActedOnIn(object, raw) {
				if name == "" {
					t.Fatal("an empty field name")
				}
			}
		}
	})
}
