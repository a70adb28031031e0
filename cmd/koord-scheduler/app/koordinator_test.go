package app

import (
	"strings"
	"testing"
)

func TestAdaptKoordinatorConfig(t *testing.T) {
	in := `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: koord-scheduler
    plugins:
      multiPoint:
        enabled: [{name: Coscheduling}, {name: LoadAwareScheduling}]
      postFilter:
        enabled: [{name: Reservation}, {name: ElasticQuota}, {name: DefaultPreemption}]
      filter:
        enabled: [{name: DeviceShare}]
      score:
        enabled: [{name: Reservation, weight: 5000}]
    pluginConfig:
      - name: ElasticQuota
        args: {quotaGroupNamespace: koordinator-system}
      - name: LoadAwareScheduling
        args: {usageThresholds: {cpu: 70}}
`
	out, dropped, err := adaptKoordinatorConfig([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	// Coscheduling and ElasticQuota are Koord's now: kept. Koordinator also
	// lists Coscheduling at postFilter and permit through multiPoint, which
	// it implements.
	if got := strings.Join(dropped, ","); got != "DeviceShare,Reservation at postFilter" {
		t.Errorf("dropped %s", got)
	}
	for _, gone := range []string{"DeviceShare"} {
		if strings.Contains(string(out), gone) {
			t.Errorf("%s still in the adapted configuration:\n%s", gone, out)
		}
	}
	for _, kept := range []string{"Coscheduling", "ElasticQuota", "quotaGroupNamespace", "LoadAwareScheduling", "DefaultPreemption", "weight: 5000", "cpu: 70"} {
		if !strings.Contains(string(out), kept) {
			t.Errorf("%s lost from the adapted configuration:\n%s", kept, out)
		}
	}
	// Koord's own configuration is left exactly as written.
	own := "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n  - schedulerName: koord-scheduler\n"
	if out, dropped, err := adaptKoordinatorConfig([]byte(own)); err != nil || len(dropped) > 0 || string(out) != own {
		t.Errorf("changed a configuration with nothing to leave out: %q %v %v", out, dropped, err)
	}
}

func FuzzAdaptKoordinatorConfig(f *testing.F) {
	f.Add("profiles: [{plugins: {filter: {enabled: [{name: DeviceShare}]}}}]")
	f.Add("profiles: [{pluginConfig: [{name: Coscheduling}, 7]}]")
	f.Add("profiles: 3")
	f.Fuzz(func(t *testing.T, in string) {
		out, dropped, err := adaptKoordinatorConfig([]byte(in))
		if err == nil && len(dropped) == 0 && string(out) != in {
			t.Fatalf("changed a configuration with nothing to leave out")
		}
	})
}
