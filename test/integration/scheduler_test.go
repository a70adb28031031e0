package integration

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/koord-project/koord/internal/controlplane"
	"github.com/koord-project/koord/manifests"
)

// The shipped configuration with valid LoadAwareScheduling args added: they
// must decode into typed args (the scheduler would reject the file otherwise).
var configWithArgs = loadAwareConfig("{usageThresholds: {cpu: 70, memory: 90}, scoringStrategy: MostUsed}")

func TestSchedulesOnlyKoordPods(t *testing.T) {
	for name, config := range map[string][]byte{"shipped config": manifests.SchedulerConfig, "config with plugin args": []byte(configWithArgs)} {
		t.Run(name, func(t *testing.T) {
			ctx := testContext(t)
			cp := startControlPlane(t, controlplane.Options{})
			sched := startScheduler(t, ctx, cp, config)

			for _, n := range []string{"node-a", "node-b"} {
				if _, err := cp.CreateNode(ctx, controlplane.NodeSpec{Name: n, CPU: "4", Memory: "16Gi"}); err != nil {
					t.Fatal(err)
				}
			}
			// The foreign pod goes first: by the time ours is bound, the
			// scheduler has seen both.
			if _, err := cp.CreatePod(ctx, controlplane.PodSpec{Name: "foreign", SchedulerName: "other-scheduler", CPU: "1"}); err != nil {
				t.Fatal(err)
			}
			if _, err := cp.CreatePod(ctx, controlplane.PodSpec{Name: "ours", SchedulerName: "koord-scheduler", CPU: "1"}); err != nil {
				t.Fatal(err)
			}
			pod, err := cp.WaitForPodBound(ctx, "default", "ours", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if pod.Spec.NodeName != "node-a" && pod.Spec.NodeName != "node-b" {
				t.Errorf("bound to %q", pod.Spec.NodeName)
			}
			foreign, err := cp.Client.CoreV1().Pods("default").Get(ctx, "foreign", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if foreign.Spec.NodeName != "" || len(foreign.Status.Conditions) != 0 {
				t.Errorf("koord-scheduler touched a pod of another scheduler: node %q, conditions %v", foreign.Spec.NodeName, foreign.Status.Conditions)
			}
			if err := sched.Err(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestUnschedulablePodGetsReason(t *testing.T) {
	ctx := testContext(t)
	cp := startControlPlane(t, controlplane.Options{})
	startScheduler(t, ctx, cp, manifests.SchedulerConfig)
	if _, err := cp.CreateNode(ctx, controlplane.NodeSpec{Name: "small", CPU: "2", Memory: "4Gi"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cp.CreatePod(ctx, controlplane.PodSpec{Name: "huge", SchedulerName: "koord-scheduler", CPU: "8"}); err != nil {
		t.Fatal(err)
	}
	var msg string
	deadline := time.Now().Add(time.Minute)
	for msg == "" && time.Now().Before(deadline) {
		pod, err := cp.Client.CoreV1().Pods("default").Get(ctx, "huge", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if pod.Spec.NodeName != "" {
			t.Fatalf("an 8-CPU pod was bound to a 2-CPU node")
		}
		msg = controlplane.PodUnschedulableMessage(pod)
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(msg, "Insufficient cpu") {
		t.Errorf("PodScheduled message %q does not say why", msg)
	}
}

func TestInvalidPluginArgsRejectedAtStart(t *testing.T) {
	ctx := testContext(t)
	cp := startControlPlane(t, controlplane.Options{})
	cases := map[string]struct{ args, want string }{
		"out of range":  {"{usageThresholds: {cpu: 150}}", "usageThresholds[cpu]"},
		"unknown field": {"{usageThreshold: {cpu: 50}}", `unknown field "usageThreshold"`},
		"wrong type":    {"{nodeMetricExpirationSeconds: soon}", "nodeMetricExpirationSeconds"},
		"bad strategy":  {"{scoringStrategy: Random}", "scoringStrategy"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sched, err := cp.StartScheduler(ctx, []byte(loadAwareConfig(tc.args)))
			if err == nil {
				sched.Stop()
				t.Fatal("koord-scheduler started with invalid args")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not name %q", err, tc.want)
			}
		})
	}
}
