package perf

import (
	"context"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"

	"github.com/koord-project/koord/cmd/koord-scheduler/app"
)

// enabledByProfile loads cfg as koord-scheduler loads its own and names
// the plugins each of its profiles enables, by schedulerName.
func enabledByProfile(t *testing.T, cfg []byte) map[string][]string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := app.ValidateConfigFile(path); err != nil {
		t.Fatal(err)
	}
	loaded, err := options.LoadConfigFromFile(klog.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, p := range loaded.Profiles {
		out[p.SchedulerName] = []string{}
		for _, set := range []schedconfig.PluginSet{p.Plugins.MultiPoint, p.Plugins.PreFilter, p.Plugins.Filter, p.Plugins.Score, p.Plugins.Reserve, p.Plugins.Bind} {
			for _, pl := range set.Enabled {
				out[p.SchedulerName] = append(out[p.SchedulerName], pl.Name)
			}
		}
	}
	return out
}

// A paired run's configuration loads as koord-scheduler loads its own, and
// holds stock kube-scheduler's profile, without any Koord plugin, the floor
// profile with the floor plugins and no Koord plugin, and the shipped Koord
// profile with all of them and no floor plugin.
func TestPairedConfig(t *testing.T) {
	cfg, err := pairedConfig(pairedProfiles)
	if err != nil {
		t.Fatal(err)
	}
	byProfile := enabledByProfile(t, cfg)
	if len(byProfile) != len(pairedProfiles) {
		t.Fatalf("profiles %v, want %v", slices.Collect(maps.Keys(byProfile)), pairedProfiles)
	}
	for name, enabled := range byProfile {
		if !slices.Contains(pairedProfiles, name) {
			t.Errorf("unexpected profile %q", name)
		}
		for _, koord := range allPlugins {
			if has := slices.Contains(enabled, koord); has != (name == koordProfile) {
				t.Errorf("profile %s: %s enabled %v", name, koord, has)
			}
		}
		for _, f := range floorPlugins {
			if has := slices.Contains(enabled, f.name); has != (name == floorProfile) {
				t.Errorf("profile %s: %s enabled %v", name, f.name, has)
			}
		}
	}
}

// Blocks of ten take turns between the profiles, and each block keeps the
// mix's kinds of pod.
func TestRotating(t *testing.T) {
	m := realistic.rotating(pairedProfiles)
	for i, want := range map[int]string{0: stockProfile, 9: stockProfile, 10: floorProfile, 19: floorProfile, 20: koordProfile, 30: stockProfile, 8010: stockProfile, 8020: floorProfile} {
		p := m.pod("ns", i)
		if p.Spec.SchedulerName != want {
			t.Errorf("pod %d: schedulerName %q, want %q", i, p.Spec.SchedulerName, want)
		}
		if orig := realistic.pod("ns", i); p.Spec.Containers[0].Resources.Requests.Cpu().String() != orig.Spec.Containers[0].Resources.Requests.Cpu().String() ||
			p.Labels["app"] != orig.Labels["app"] {
			t.Errorf("pod %d changed kind: %v %v", i, p.Labels, p.Spec.Containers[0].Resources.Requests)
		}
	}
	if realistic.pod("ns", 0).Spec.SchedulerName != koordProfile {
		t.Error("rotating changed the mix it was made from")
	}
}

// A profile's cycle is the mean time per scheduled pod in the cycle's
// extension points, from the histograms' sums over the measured phase.
func TestCycleMs(t *testing.T) {
	const points = "scheduler_framework_extension_point_duration_seconds"
	hist := func(count uint64, sum float64) *dto.Histogram {
		return &dto.Histogram{SampleCount: ptr.To(count), SampleSum: ptr.To(sum)}
	}
	filter := key(points, labels("extension_point", "Filter", "profile", stockProfile, "status", "Success"))
	score := key(points, labels("extension_point", "Score", "profile", stockProfile, "status", "Success"))
	bind := key(points, labels("extension_point", "Bind", "profile", stockProfile, "status", "Success"))
	koordFilter := key(points, labels("extension_point", "Filter", "profile", koordProfile, "status", "Success"))
	before := histograms{filter: hist(10, 1), score: hist(10, 0.5)}
	after := histograms{filter: hist(110, 3), score: hist(110, 1.5), bind: hist(100, 9), koordFilter: hist(100, 7)}
	got := map[string]float64{}
	for _, point := range []string{"Filter", "Score", "Bind"} {
		got[point] = after.since(before, points, "extension_point="+point, "profile="+stockProfile).sum * 1000 / 100
	}
	// 2 s of Filter and 1 s of Score over 100 pods: 20 + 10 ms a pod; Bind
	// is not in the cycle, and Koord's Filter is another profile.
	if c := cycleMs(got); math.Abs(c-30) > 1e-9 {
		t.Errorf("cycle %v ms, want 30 (%v)", c, got)
	}
}

// koord-filter-own-ms counts PreFilter and Filter only: Score's timings are
// mostly dropped by the scheduler, and would come and go between runs.
func TestFilterOwnMs(t *testing.T) {
	own := map[string]float64{"LoadAwareScheduling/Filter": 0.3, "LoadAwareScheduling/PreFilter": 0.02, "NodeNUMAResource/Filter": 0.05, "LoadAwareScheduling/Score": 0.1, "Reservation/PreScore": 0.01}
	if got := filterOwnMs(own); math.Abs(got-0.37) > 1e-9 {
		t.Errorf("own time in PreFilter and Filter %v ms, want 0.37", got)
	}
}

// Each floor plugin runs Filter and Score for the pods of each mix as the
// Koord plugin it stands for does.
func TestFloorPlugins(t *testing.T) {
	plain, owner, binding := realistic.pod("ns", 3), realistic.pod("ns", 10), realistic.pod("ns", 1)
	for _, tc := range []struct {
		plugin                string
		pod                   *corev1.Pod
		wantFilter, wantScore bool
	}{
		{"FloorLikeLoadAware", plain, true, true},
		{"FloorLikeLoadAware", binding, true, true},
		{"FloorLikeReservation", plain, true, false},
		{"FloorLikeReservation", owner, true, true},
		{"FloorLikeReservation", binding, true, false},
		{"FloorLikeNUMA", plain, false, false},
		{"FloorLikeNUMA", owner, false, false},
		{"FloorLikeNUMA", binding, true, true},
	} {
		i := slices.IndexFunc(floorPlugins, func(f floorPlugin) bool { return f.name == tc.plugin })
		if i < 0 {
			t.Fatalf("no floor plugin %s", tc.plugin)
		}
		pl := &floorPlugins[i]
		_, st := pl.PreFilter(context.Background(), framework.NewCycleState(), tc.pod, nil)
		if filters := st.Code() != fwk.Skip; filters != tc.wantFilter {
			t.Errorf("%s, pod %s: Filter runs %v, want %v", tc.plugin, tc.pod.Name, filters, tc.wantFilter)
		}
		if scores := pl.PreScore(context.Background(), nil, tc.pod, nil).Code() != fwk.Skip; scores != tc.wantScore {
			t.Errorf("%s, pod %s: Score runs %v, want %v", tc.plugin, tc.pod.Name, scores, tc.wantScore)
		}
	}
}
