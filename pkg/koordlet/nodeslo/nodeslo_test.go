package nodeslo

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
	slolisters "github.com/koord-project/koord/pkg/client/listers/slo/v1alpha1"
)

func spec(t testing.TB, doc string) *slov1alpha1.NodeSLOSpec {
	t.Helper()
	var s slov1alpha1.NodeSLOSpec
	if err := json.Unmarshal([]byte(doc), &s); err != nil {
		t.Fatal(err)
	}
	return &s
}

func TestDefaults(t *testing.T) {
	s := Default()
	th := s.Threshold
	if th.Enable || th.CPUSuppressThresholdPercent != 65 || th.CPUSuppressPolicy != slov1alpha1.CPUSetPolicy ||
		th.MemoryEvictThresholdPercent != 70 || th.MemoryEvictLowerPercent != 68 || th.CPUEvictConfigured || th.CPUEvictBEUsageThresholdPercent != 90 {
		t.Errorf("threshold defaults %+v", th)
	}
	if s.BE.CPUEnable || s.BE.GroupIdentity != -1 || s.LS.GroupIdentity != 2 || s.LSR.GroupIdentity != 2 {
		t.Errorf("CPU QoS defaults %+v %+v", s.LS, s.BE)
	}
	if b := s.Burst; b.Policy != slov1alpha1.CPUBurstNone || b.CPUBurstPercent != 1000 || b.CFSQuotaBurstPercent != 300 ||
		b.CFSQuotaBurstPeriodSeconds != -1 || b.SharePoolThresholdPercent != 50 || b.CPUBurstOn() || b.CFSQuotaBurstOn() {
		t.Errorf("burst defaults %+v", b)
	}
	if s.Guard.Enable || s.Guard.TargetP99 != time.Millisecond || s.Guard.StepPercent != 10 || s.Guard.MinWaits != 100 {
		t.Errorf("guard defaults %+v", s.Guard)
	}
}

func TestResolve(t *testing.T) {
	s, err := Resolve(spec(t, `{"resourceUsedThresholdWithBE":{"enable":true,"cpuSuppressThresholdPercent":50,"cpuSuppressPolicy":"cfsQuota",
		"memoryEvictThresholdPercent":80,"cpuEvictBESatisfactionLowerPercent":40,"cpuEvictBESatisfactionUpperPercent":80,"cpuEvictTimeWindowSeconds":30},
		"resourceQOSStrategy":{"beClass":{"cpuQOS":{"enable":true},"memoryQOS":{"enable":true,"minLimitPercent":10}}},
		"cpuBurstStrategy":{"policy":"auto","sharePoolThresholdPercent":40},
		"extensions":{"koord.sh/interferenceGuard":{"enable":true,"lsRunQueueLatencyP99Microseconds":500},"vendor.example/other":{"x":1}}}`))
	if err != nil {
		t.Fatal(err)
	}
	th := s.Threshold
	if !th.Enable || th.CPUSuppressThresholdPercent != 50 || th.CPUSuppressPolicy != slov1alpha1.CPUCfsQuotaPolicy ||
		th.MemoryEvictLowerPercent != 78 || !th.CPUEvictConfigured || th.CPUEvictTimeWindow != 30*time.Second {
		t.Errorf("threshold %+v", th)
	}
	if !s.BE.CPUEnable || s.BE.GroupIdentity != -1 || !s.BE.MemoryEnable || s.BE.MinLimitPercent != 10 || s.Class("LSE") != s.LSR {
		t.Errorf("classes %+v", s)
	}
	if !s.Burst.CPUBurstOn() || !s.Burst.CFSQuotaBurstOn() || s.Burst.SharePoolThresholdPercent != 40 {
		t.Errorf("burst %+v", s.Burst)
	}
	if !s.Guard.Enable || s.Guard.TargetP99 != 500*time.Microsecond {
		t.Errorf("guard %+v", s.Guard)
	}
}

// Values the CRD schema cannot check are errors naming the field.
func TestResolveRejects(t *testing.T) {
	for doc, field := range map[string]string{
		`{"resourceUsedThresholdWithBE":{"memoryEvictThresholdPercent":60,"memoryEvictLowerPercent":70}}`:                   "memoryEvictLowerPercent",
		`{"resourceUsedThresholdWithBE":{"cpuEvictBESatisfactionLowerPercent":70,"cpuEvictBESatisfactionUpperPercent":80}}`: "cpuEvictBESatisfactionLowerPercent",
		`{"resourceUsedThresholdWithBE":{"cpuEvictBESatisfactionLowerPercent":50,"cpuEvictBESatisfactionUpperPercent":40}}`: "cpuEvictBESatisfactionLowerPercent",
		`{"resourceUsedThresholdWithBE":{"cpuSuppressThresholdPercent":40,"cpuSuppressMinPercent":50}}`:                     "cpuSuppressMinPercent",
		`{"resourceUsedThresholdWithBE":{"cpuSuppressThresholdPercent":140}}`:                                               "cpuSuppressThresholdPercent",
		`{"resourceUsedThresholdWithBE":{"cpuSuppressPolicy":"both"}}`:                                                      "cpuSuppressPolicy",
		`{"resourceQOSStrategy":{"beClass":{"cpuQOS":{"groupIdentity":5}}}}`:                                                "beClass.cpuQOS.groupIdentity",
		`{"resourceQOSStrategy":{"lsClass":{"memoryQOS":{"throttlingPercent":101}}}}`:                                       "lsClass.memoryQOS.throttlingPercent",
		`{"cpuBurstStrategy":{"policy":"turbo"}}`:                                                                           "cpuBurstStrategy.policy",
		`{"cpuBurstStrategy":{"cfsQuotaBurstPercent":90}}`:                                                                  "cfsQuotaBurstPercent",
		`{"extensions":{"koord.sh/interferenceGuard":{"stepPercent":0}}}`:                                                   "koord.sh/interferenceGuard",
		`{"extensions":{"koord.sh/interferenceGuard":{"enable":true,"target":3}}}`:                                          "koord.sh/interferenceGuard",
	} {
		if _, err := Resolve(spec(t, doc)); err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: %v, want an error naming %s", doc, err, field)
		}
	}
}

func FuzzResolve(f *testing.F) {
	for _, s := range []string{`{}`, `{"resourceUsedThresholdWithBE":{"enable":true,"memoryEvictLowerPercent":-3}}`,
		`{"cpuBurstStrategy":{"policy":"auto","cfsQuotaBurstPeriodSeconds":-2}}`, `{"extensions":{"koord.sh/interferenceGuard":[]}}`,
		`{"extensions":{"koord.sh/interferenceGuard":{"enable":true,"minWaits":-1}}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		var s slov1alpha1.NodeSLOSpec
		if json.Unmarshal([]byte(doc), &s) != nil {
			return
		}
		st, err := Resolve(&s)
		if err != nil {
			return
		}
		th := st.Threshold
		if th.MemoryEvictLowerPercent >= th.MemoryEvictThresholdPercent || th.CPUSuppressThresholdPercent > 100 || th.CPUSuppressThresholdPercent < 0 ||
			st.Burst.CFSQuotaBurstPercent < 100 || st.Guard.StepPercent < 1 || st.Guard.TargetP99 <= 0 {
			t.Fatalf("accepted an inconsistent strategy %+v from %s", st, doc)
		}
	})
}

// A NodeSLO that does not resolve leaves the last valid strategy in force,
// reported once per version with an event; deleting it brings the defaults.
func TestSource(t *testing.T) {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	rec := record.NewFakeRecorder(10)
	src := &Source{Lister: slolisters.NewNodeSLOLister(idx), Node: "n1", Recorder: rec}
	logger := klog.Background()
	if got := src.Get(logger); got != Default() {
		t.Errorf("no NodeSLO: %+v", got)
	}
	set := func(version, doc string) {
		_ = idx.Update(&slov1alpha1.NodeSLO{ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: version}, Spec: *spec(t, doc)})
	}
	set("1", `{"resourceUsedThresholdWithBE":{"enable":true,"cpuSuppressThresholdPercent":50}}`)
	if got := src.Get(logger); !got.Threshold.Enable || got.Threshold.CPUSuppressThresholdPercent != 50 {
		t.Errorf("valid NodeSLO: %+v", got.Threshold)
	}
	set("2", `{"resourceUsedThresholdWithBE":{"enable":true,"memoryEvictThresholdPercent":50,"memoryEvictLowerPercent":60}}`)
	for i := 0; i < 3; i++ {
		if got := src.Get(logger); got.Threshold.CPUSuppressThresholdPercent != 50 {
			t.Errorf("invalid NodeSLO replaced the last valid one: %+v", got.Threshold)
		}
	}
	if len(rec.Events) != 1 {
		t.Fatalf("%d events, want one", len(rec.Events))
	}
	if ev := <-rec.Events; !strings.Contains(ev, "InvalidNodeSLO") || !strings.Contains(ev, "memoryEvictLowerPercent") {
		t.Errorf("event %q", ev)
	}
	_ = idx.Delete(&slov1alpha1.NodeSLO{ObjectMeta: metav1.ObjectMeta{Name: "n1"}})
	if got := src.Get(logger); got != Default() {
		t.Errorf("deleted NodeSLO: %+v", got)
	}
}
