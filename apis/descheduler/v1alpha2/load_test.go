package v1alpha2

import (
	"strings"
	"testing"
	"time"
)

// Koordinator's shipped configuration (config/manager/descheduler-config.yaml),
// with LowNodeLoad enabled at balance as its users enable it.
const koordinatorConfig = `
apiVersion: descheduler/v1alpha2
kind: DeschedulerConfiguration
enableContentionProfiling: true
enableProfiling: true
healthzBindAddress: 0.0.0.0:10251
metricsBindAddress: 0.0.0.0:10251
leaderElection:
  resourceLock: leases
  resourceName: koord-descheduler
  resourceNamespace: koordinator-system
deschedulingInterval: 10s
dryRun: false
profiles:
- name: koord-descheduler
  plugins:
    deschedule:
      disabled:
        - name: "*"
    balance:
      enabled:
        - name: LowNodeLoad
    evict:
      disabled:
        - name: "*"
      enabled:
        - name: MigrationController
  pluginConfig:
  - name: MigrationController
    args:
      apiVersion: descheduler/v1alpha2
      kind: MigrationControllerArgs
      evictionPolicy: Eviction
      namespaces:
        exclude:
          - kube-system
          - koordinator-system
      evictQPS: "10"
      evictBurst: 1
  - name: LowNodeLoad
    args:
      apiVersion: descheduler/v1alpha2
      kind: LowNodeLoadArgs
      evictableNamespaces:
        exclude:
          - kube-system
          - koordinator-system
      useDeviationThresholds: false
      lowThresholds:
        cpu: 45
        memory: 55
      highThresholds:
        cpu: 75
        memory: 80
`

func TestKoordinatorConfigLoads(t *testing.T) {
	c, err := Load([]byte(koordinatorConfig))
	if err != nil {
		t.Fatal(err)
	}
	if c.DeschedulingInterval.Duration != 10*time.Second || len(c.Run) != 1 {
		t.Fatalf("%+v", c)
	}
	p := c.Run[0]
	if p.LowNodeLoad == nil || p.LowNodeLoad.HighThresholds["cpu"] != 75 || p.LowNodeLoad.LowThresholds["memory"] != 55 {
		t.Fatalf("LowNodeLoad %+v", p.LowNodeLoad)
	}
	// Koordinator's defaults.
	l, m := p.LowNodeLoad, p.MigrationController
	if !*l.NodeFit || l.AnomalyCondition.ConsecutiveAbnormalities != 5 || *l.NodeMetricExpirationSeconds != 180 || l.ResourceWeights["cpu"] != 1 {
		t.Errorf("LowNodeLoad defaults %+v %+v", l, l.AnomalyCondition)
	}
	if *m.MaxMigratingPerNode != 2 || m.DefaultJobMode != JobModeReservationFirst || m.DefaultJobTTL.Duration != 5*time.Minute ||
		float64(*m.EvictQPS) != 10 || m.SchedulerNames[0] != "koord-scheduler" {
		t.Errorf("MigrationController defaults %+v", m)
	}
	want := []string{"enableProfiling", "enableContentionProfiling", "healthzBindAddress", "metricsBindAddress"}
	got := strings.Join(c.NotActedOn, "; ")
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("not acted on %q lacks %s", got, w)
		}
	}
}

func TestLoadErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct{ edit, want string }{
		{`s/highThresholds:/highThreshold:/`, `profiles[0] (koord-descheduler): pluginConfig[1] (LowNodeLoad).args: unknown field "highThreshold"`},
		{`s/cpu: 45/cpu: 95/`, "lowThresholds.cpu: 95 is above highThresholds.cpu 75"},
		{`s/memory: 80/memory: 180/`, "highThresholds.memory: 180 is not a percentage"},
		{`s/evictionPolicy: Eviction/evictionPolicy: Shoot/`, `evictionPolicy: "Shoot"`},
		{`s/evictQPS: "10"/evictQPS: "fast"/`, `"fast" is not a number`},
		{`s/deschedulingInterval: 10s/deschedulingInterval: soon/`, "deschedulingInterval"},
		{`s/kind: DeschedulerConfiguration/kind: Policy/`, `kind "Policy"`},
		{`s/dryRun: false/dryrun: false/`, `unknown field "dryrun"`},
	} {
		from, to, _ := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(tc.edit, "s/"), "/"), "/")
		_, err := Load([]byte(strings.Replace(koordinatorConfig, from, to, 1)))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.edit, err, tc.want)
		}
	}
}

// Plugins Koord does not have are reported, not refused.
func TestOtherPluginsAreReported(t *testing.T) {
	cfg := koordinatorConfig + `
  - name: RemovePodsViolatingNodeAffinity
    args:
      nodeAffinityType: [requiredDuringSchedulingIgnoredDuringExecution]
`
	cfg = strings.Replace(cfg, "        - name: LowNodeLoad\n", "        - name: LowNodeLoad\n        - name: RemoveDuplicates\n", 1)
	c, err := Load([]byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(c.NotActedOn, "; ")
	for _, w := range []string{"plugins.balance.enabled RemoveDuplicates", "pluginConfig[2] RemovePodsViolatingNodeAffinity"} {
		if !strings.Contains(got, w) {
			t.Errorf("%q lacks %s", got, w)
		}
	}
}

func TestDefaultsWithoutAFile(t *testing.T) {
	c, err := Load([]byte("apiVersion: descheduler/v1alpha2\nkind: DeschedulerConfiguration\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.DeschedulingInterval.Duration != 2*time.Minute || c.Run[0].LowNodeLoad != nil || c.Run[0].MigrationController == nil {
		t.Errorf("%+v", c.Run[0])
	}
}

func FuzzLoad(f *testing.F) {
	f.Add([]byte(koordinatorConfig))
	f.Add([]byte("apiVersion: descheduler/v1alpha2\nkind: DeschedulerConfiguration\nprofiles: [{pluginConfig: [{name: LowNodeLoad, args: {nodePools: [{}]}}]}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Load(data)
		if err == nil && len(c.Run) == 0 {
			t.Fatal("a configuration with no profile to run")
		}
	})
}
