package extension

import (
	"encoding/json"
	"reflect"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
)

var quantityPattern = regexp.MustCompile(QuantityPattern)

func TestCheckQuantity(t *testing.T) {
	for _, ok := range []string{"1", "1500m", "2Gi", "-1", "+.5", "0.25", "1.", "5e-3", "1E18", "1e+10", "9223372036854775807",
		strings.Repeat("9", 30) + "." + strings.Repeat("9", 30) + "Ei"} {
		if err := CheckQuantity(ok); err != nil {
			t.Errorf("CheckQuantity(%q) = %v, want accepted", ok, err)
		}
		if !quantityPattern.MatchString(ok) {
			t.Errorf("QuantityPattern refuses %q, which CheckQuantity accepts", ok)
		}
	}
	for bad, want := range map[string]string{
		"1e-9999999":                   "exponent of 7 digits",
		"1e100":                        "exponent of 3 digits",
		strings.Repeat("1", 31):        "more than 30 digits",
		"0." + strings.Repeat("0", 31): "more than 30 digits",
		"":                             "does not start with a digit",
		".":                            "no digits",
		"1Gb":                          "unknown suffix",
		"1e":                           "malformed exponent",
		"1e--3":                        "malformed exponent",
		"+-1":                          "not a number",
		"abc":                          "does not start with a digit",
	} {
		err := CheckQuantity(bad)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckQuantity(%q) = %v, want an error saying %q", bad, err, want)
		}
		if quantityPattern.MatchString(bad) {
			t.Errorf("QuantityPattern accepts %q, which CheckQuantity refuses", bad)
		}
	}
}

// The schema pattern and the check agree, and what both accept parses (or
// is refused by ParseQuantity) without a bound-breaking cost.
func FuzzCheckQuantity(f *testing.F) {
	for _, s := range []string{"1", "1500m", "2Gi", "1e-9999999", "1e-99", "9.99e+99", "1e999", "0.000001", ".5", "-1e-5Ki", "1e+-3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := CheckQuantity(s)
		if (err == nil) != quantityPattern.MatchString(s) {
			t.Fatalf("CheckQuantity(%q) = %v but QuantityPattern matches: %v", s, err, quantityPattern.MatchString(s))
		}
		if err == nil {
			_, _ = resource.ParseQuantity(s)
		}
	})
}

type withQuantities struct {
	Name      string              `json:"name"`
	Resources corev1.ResourceList `json:"resources,omitempty"`
	Items     []*withQuantities   `json:"items,omitempty"`
	Inline    `json:",inline"`
}

type Inline struct {
	Limit *resource.Quantity `json:"limit,omitempty"`
}

func TestCheckQuantities(t *testing.T) {
	typ := reflect.TypeFor[*withQuantities]()
	for doc, want := range map[string]string{
		`{"name":"1e-9999999","resources":{"cpu":"1"}}`:                  "",
		`{"resources":{"cpu":"1","memory":"1e-9999999"}}`:                "resources.memory: quantity \"1e-9999999\"",
		`{"items":[{"items":[{"resources":{"cpu":"1e-999"}}]}]}`:         "items[0].items[0].resources.cpu",
		`{"limit":"1e-99999"}`:                                           "limit: quantity",
		`{"limit":1e-300}`:                                               "limit: quantity 1e-300 is out of range",
		`{"limit":12345}`:                                                "",
		`{"resources":"not a map","items":"not a list","limit":{"x":1}}`: "",
	} {
		var v any
		d := json.NewDecoder(strings.NewReader(doc))
		if strings.Contains(doc, "1e-300") {
			// As an unstructured object holds it: a float.
			if err := json.Unmarshal([]byte(doc), &v); err != nil {
				t.Fatal(err)
			}
		} else {
			d.UseNumber()
			if err := d.Decode(&v); err != nil {
				t.Fatal(err)
			}
		}
		err := CheckQuantities(v, typ)
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("CheckQuantities(%s) = %v, want %q", doc, err, want)
		}
	}
	// A type that holds no quantity is not walked at all.
	if quantityShape(reflect.TypeFor[ResourceSpec]()).has {
		t.Error("ResourceSpec holds no quantity")
	}
	if !quantityShape(reflect.TypeFor[corev1.PodTemplateSpec]()).has {
		t.Error("a pod template holds quantities")
	}
}

// An annotation whose quantity is a bomb is refused before it is parsed,
// naming the key and the path.
func TestAnnotationQuantityBomb(t *testing.T) {
	_, err := GetResourceStatus(map[string]string{AnnotationResourceStatus: `{"cpuset":"0","numaNodeResources":[{"node":0,"resources":{"cpu":"1e-9999999"}}]}`})
	if err == nil || !strings.Contains(err.Error(), AnnotationResourceStatus) || !strings.Contains(err.Error(), "numaNodeResources[0].resources.cpu") {
		t.Errorf("got %v, want refused naming the key and numaNodeResources[0].resources.cpu", err)
	}
	_, err = GetNodeRawAllocatable(map[string]string{AnnotationNodeRawAllocatable: `{"cpu":"1e-99999999"}`})
	if err == nil || !strings.Contains(err.Error(), AnnotationNodeRawAllocatable) {
		t.Errorf("got %v, want refused naming %s", err, AnnotationNodeRawAllocatable)
	}
	_, err = GetQuotaSpec(nil, map[string]string{AnnotationSharedWeight: `{"cpu":"1e-99999999"}`})
	if err == nil || !strings.Contains(err.Error(), AnnotationSharedWeight) {
		t.Errorf("got %v, want refused naming %s", err, AnnotationSharedWeight)
	}
}

func BenchmarkCheckQuantitiesPodTemplate(b *testing.B) {
	tmpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: make([]corev1.Container, 4)}}
	for i := range tmpl.Spec.Containers {
		tmpl.Spec.Containers[i] = corev1.Container{Name: "c", Image: "x", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{"cpu": resource.MustParse("1500m"), "memory": resource.MustParse("2Gi")}}}
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&tmpl)
	if err != nil {
		b.Fatal(err)
	}
	typ := reflect.TypeFor[*corev1.PodTemplateSpec]()
	b.ReportAllocs()
	for b.Loop() {
		if err := CheckQuantities(u, typ); err != nil {
			b.Fatal(err)
		}
	}
}
