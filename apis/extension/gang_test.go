package extension

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestGetGangSpec(t *testing.T) {
	g, err := GetGangSpec(nil, map[string]string{AnnotationGangName: "train", AnnotationGangMinNum: "8", AnnotationGangTotalNum: "10",
		AnnotationGangWaitTime: "300s", AnnotationGangMode: GangModeNonStrict, AnnotationGangGroups: `["default/train","default/eval"]`})
	if err != nil {
		t.Fatal(err)
	}
	if g.Name != "train" || g.MinMember != 8 || g.TotalMember != 10 || g.WaitTime != 5*time.Minute || g.Mode != GangModeNonStrict || len(g.Groups) != 2 || g.FromPodGroup {
		t.Errorf("annotations: %+v", g)
	}
	// A PodGroup's label wins over the annotations' name.
	if g, _ := GetGangSpec(map[string]string{LabelPodGroup: "pg"}, map[string]string{AnnotationGangName: "other"}); g.Name != "pg" || !g.FromPodGroup {
		t.Errorf("PodGroup label: %+v", g)
	}
	if g, _ := GetGangSpec(map[string]string{LabelLightweightPodGroupName: "lw", LabelLightweightPodGroupMinAvailable: "3"}, nil); g.Name != "lw" || g.MinMember != 3 {
		t.Errorf("lightweight labels: %+v", g)
	}
	if g, err := GetGangSpec(nil, map[string]string{AnnotationGangMinNum: "x"}); err != nil || g.Name != "" {
		t.Errorf("no gang name: %+v, %v; want no gang and no error", g, err)
	}
	for key, value := range map[string]string{
		AnnotationGangMinNum: "eight", AnnotationGangTotalNum: "2", AnnotationGangWaitTime: "soon", AnnotationGangMode: "Loose",
		AnnotationGangGroups: `["nope"]`, AnnotationGangMatchPolicy: "all", AnnotationGangName: "Not_A_Name",
	} {
		ann := map[string]string{AnnotationGangName: "g", AnnotationGangMinNum: "4", key: value}
		if _, err := GetGangSpec(nil, ann); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s=%q: %v, want an error naming the key", key, value, err)
		}
	}
}

// Whatever a tenant writes in the gang keys, the parser answers with a
// spec or an error naming one of them, never a panic.
func FuzzGangSpec(f *testing.F) {
	f.Add("g", "8", "10", "30s", "Strict", `["default/g"]`, "once-satisfied")
	f.Add("", "-1", "x", "0s", "nope", `[1]`, "")
	many := make([]string, 70)
	for i := range many {
		many[i] = fmt.Sprintf(`"default/g%d"`, i)
	}
	f.Add("g", "2", "2", "", "", "["+strings.Join(many, ",")+"]", "")
	f.Add("g", "2", "2", "", "", `["default/g","default/g"]`, "")
	f.Fuzz(func(t *testing.T, name, minNum, total, wait, mode, groups, policy string) {
		ann := map[string]string{AnnotationGangName: name, AnnotationGangMinNum: minNum, AnnotationGangTotalNum: total,
			AnnotationGangWaitTime: wait, AnnotationGangMode: mode, AnnotationGangGroups: groups, AnnotationGangMatchPolicy: policy}
		g, err := GetGangSpec(nil, ann)
		if err != nil {
			ke, ok := err.(*KeyError)
			if !ok || !strings.HasPrefix(ke.Key, gangPrefix) {
				t.Fatalf("error %q names no gang key", err)
			}
			return
		}
		if name != "" && (g.Name != name || g.MinMember < 0 || (g.TotalMember != 0 && g.TotalMember < g.MinMember)) {
			t.Fatalf("accepted an inconsistent gang %+v", g)
		}
	})
}

// A gang group names a few gangs; a list longer than MaxGangGroups, or one
// naming a gang twice, is refused naming the key.
func TestGangGroupsBounded(t *testing.T) {
	many := make([]string, MaxGangGroups+1)
	for i := range many {
		many[i] = fmt.Sprintf(`"default/g%d"`, i)
	}
	for value, want := range map[string]string{
		"[" + strings.Join(many, ",") + "]": "65 gangs, more than the 64",
		`["default/a","default/a"]`:         `"default/a" is listed twice`,
	} {
		_, err := GetGangSpec(nil, map[string]string{AnnotationGangName: "a", AnnotationGangMinNum: "1", AnnotationGangGroups: value})
		if err == nil || !strings.Contains(err.Error(), AnnotationGangGroups) || !strings.Contains(err.Error(), want) {
			t.Errorf("groups %.40s: %v, want refused saying %q", value, err, want)
		}
	}
}
