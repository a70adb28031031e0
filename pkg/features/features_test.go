package features

import (
	"flag"
	"io"
	"strings"
	"testing"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	_ "k8s.io/kubernetes/pkg/features" // Kubernetes' gates, as in kube-scheduler

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
)

func TestFlag(t *testing.T) {
	g := New()
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	Flag(fs, g)
	if !g.Enabled(BatchResource) || !g.Enabled(RunqueueLatency) {
		t.Fatal("beta gates must default on")
	}
	if err := fs.Parse([]string{"--feature-gates=BatchResource=false,RunqueueLatency=true"}); err != nil {
		t.Fatal(err)
	}
	if g.Enabled(BatchResource) {
		t.Error("BatchResource=false was not applied")
	}
	err := New().Set("NoSuchGate=true")
	if err == nil || !strings.Contains(err.Error(), "NoSuchGate") {
		t.Errorf("an unknown gate must be rejected naming it, got %v", err)
	}
}

// A Koordinator deployment's --feature-gates starts every Koord component:
// the seed's own example (PodMutatingWebhook=true, implemented now) and
// gates of each Koordinator component are accepted, the ones Koord does not
// implement reported in the metric and logged once when set away from their
// default; Koord's own gates of the same names as Koordinator's act as before.
func TestKoordinatorGatesAccepted(t *testing.T) {
	g := New()
	if err := g.Set("PodMutatingWebhook=true,RdtResctrl=false,SyncBarrier=true,BECPUSuppress=false"); err != nil {
		t.Fatalf("Koordinator's gates refused: %v", err)
	}
	if g.Enabled(BECPUSuppress) || !g.Enabled(PodMutatingWebhook) {
		t.Error("BECPUSuppress=false or PodMutatingWebhook=true (implemented, Koordinator's names) not applied")
	}
	var logged []string
	logger := funcr.New(func(_, args string) { logged = append(logged, args) }, funcr.Options{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(ReportNotImplemented(logger, g))
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]float64{}
	for _, m := range families[0].GetMetric() {
		values[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
	}
	for gate, want := range map[string]float64{"ReservationMutatingWebhook": 0, "RdtResctrl": 0, "SyncBarrier": 1, "NodeTopologyReport": 1, "AuditEvents": 0} {
		if got, ok := values[gate]; !ok || got != want {
			t.Errorf("koord_feature_gate_not_implemented{gate=%q} = %v (listed %v), want %v", gate, got, ok, want)
		}
	}
	for _, gate := range []string{string(BECPUSuppress), string(PodMutatingWebhook)} {
		if _, listed := values[gate]; listed {
			t.Errorf("implemented gate %s is listed as not implemented", gate)
		}
	}
	// Set away from their defaults: SyncBarrier (on) and RdtResctrl (off); PodMutatingWebhook=true is the default.
	if len(logged) != 1 || !strings.Contains(logged[0], `"RdtResctrl" "SyncBarrier"`) || strings.Contains(logged[0], "PodMutatingWebhook") {
		t.Errorf("logged %q, want one line naming RdtResctrl and SyncBarrier", logged)
	}
}

// koord-scheduler adds Koord's and Koordinator's gates to kube-scheduler's:
// no name collides with a Kubernetes gate.
func TestGatesJoinKubernetes(t *testing.T) {
	if err := Add(utilfeature.DefaultMutableFeatureGate.DeepCopy()); err != nil {
		t.Fatal(err)
	}
}
