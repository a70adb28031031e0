package extension

import (
	"errors"
	"strings"
	"testing"
)

func TestQuotaSpec(t *testing.T) {
	s, err := GetQuotaSpec(map[string]string{LabelQuotaParent: "batch", LabelQuotaIsParent: "true", LabelAllowLentResource: "false"},
		map[string]string{AnnotationSharedWeight: `{"cpu":"2"}`, AnnotationQuotaNamespaces: `["team-a","team-b"]`})
	if err != nil {
		t.Fatal(err)
	}
	if s.Parent != "batch" || !s.IsParent || s.AllowLent || s.SharedWeight.Cpu().MilliValue() != 2000 || strings.Join(s.Namespaces, ",") != "team-a,team-b" {
		t.Fatalf("got %+v", s)
	}
	s, err = GetQuotaSpec(map[string]string{LabelQuotaParent: RootQuotaName}, nil)
	if err != nil || s.Parent != "" || !s.AllowLent || s.IsParent || s.SharedWeight != nil {
		t.Fatalf("the root as parent, and the defaults: %+v, %v", s, err)
	}
	for key, bad := range map[string][2]map[string]string{
		LabelQuotaIsParent:        {{LabelQuotaIsParent: "yes"}, nil},
		LabelAllowLentResource:    {{LabelAllowLentResource: "False"}, nil},
		LabelQuotaParent:          {{LabelQuotaParent: "Not_A_Name"}, nil},
		AnnotationSharedWeight:    {nil, {AnnotationSharedWeight: `{"cpu":"-1"}`}},
		AnnotationQuotaNamespaces: {nil, {AnnotationQuotaNamespaces: `"team-a"`}},
	} {
		_, err := GetQuotaSpec(bad[0], bad[1])
		var ke *KeyError
		if !errors.As(err, &ke) || ke.Key != key {
			t.Errorf("%s: want an error naming it, got %v", key, err)
		}
	}
	if _, err := PodQuotaName(map[string]string{LabelQuotaName: "a/b"}); err == nil || !strings.Contains(err.Error(), LabelQuotaName) {
		t.Errorf("a pod's bad quota label: %v", err)
	}
}

// Whatever a quota's owner or a tenant writes in the quota keys, the
// parsers answer with a spec or an error naming one of them, never a panic.
func FuzzQuotaSpec(f *testing.F) {
	f.Add("parent", "true", "false", `{"cpu":"4","memory":"8Gi"}`, `["team-a"]`, "q")
	f.Add("", "x", "", `{"cpu":"-1"}`, `[1]`, "a/b")
	f.Add("", "", "", `{"cpu":"1e-9999999","memory":"1e99"}`, `[]`, "q")
	f.Fuzz(func(t *testing.T, parent, isParent, lent, weight, namespaces, podQuota string) {
		labels := map[string]string{LabelQuotaParent: parent, LabelQuotaIsParent: isParent, LabelAllowLentResource: lent}
		ann := map[string]string{AnnotationSharedWeight: weight, AnnotationQuotaNamespaces: namespaces}
		s, err := GetQuotaSpec(labels, ann)
		if err != nil {
			var ke *KeyError
			if !errors.As(err, &ke) || !strings.HasPrefix(ke.Key, quotaPrefix) {
				t.Fatalf("error %q names no quota key", err)
			}
		} else {
			for name, q := range s.SharedWeight {
				if q.Sign() < 0 {
					t.Fatalf("accepted a negative weight for %s", name)
				}
			}
		}
		if _, err := PodQuotaName(map[string]string{LabelQuotaName: podQuota}); err != nil && !strings.Contains(err.Error(), LabelQuotaName) {
			t.Fatalf("error %q names no quota key", err)
		}
	})
}
