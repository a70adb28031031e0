package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/koord-project/koord/apis/extension"
	schedulingsigsv1alpha1 "github.com/koord-project/koord/apis/schedulingsigs/v1alpha1"
	"github.com/koord-project/koord/internal/controlplane"
)

// coschedulingConfig is a koord-scheduler profile with Coscheduling on top
// of kube-scheduler's defaults.
const coschedulingConfig = `
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: koord-scheduler
    plugins:
      multiPoint:
        enabled: [{name: Coscheduling}]
    pluginConfig:
      - name: Coscheduling
        args: {defaultTimeout: 600s}
`

// gangNodes makes n nodes of 2 CPUs: room for 2n one-CPU members.
func gangNodes(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane, prefix string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		if _, err := cp.CreateNode(ctx, controlplane.NodeSpec{Name: fmt.Sprintf("%s-%d", prefix, i), CPU: "2", Memory: "8Gi"}); err != nil {
			t.Fatal(err)
		}
	}
}

func podGroup(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane, name string, minMember, timeoutSeconds int32) {
	t.Helper()
	if _, err := cp.Koord.SchedulingSigsV1alpha1().PodGroups("default").Create(ctx, &schedulingsigsv1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: schedulingsigsv1alpha1.PodGroupSpec{MinMember: minMember, ScheduleTimeoutSeconds: ptr.To(timeoutSeconds)}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// members creates n one-CPU pods of a gang, named <gang>-<i>.
func members(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane, gang string, n int, labels, annotations map[string]string) {
	t.Helper()
	for i := 0; i < n; i++ {
		if _, err := cp.CreatePod(ctx, controlplane.PodSpec{Name: fmt.Sprintf("%s-%d", gang, i), SchedulerName: "koord-scheduler", CPU: "1", Memory: "64Mi",
			Labels: labels, Annotations: annotations}); err != nil {
			t.Fatal(err)
		}
	}
}

func boundMembers(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane, prefix string) int {
	t.Helper()
	pods, err := cp.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		return -1 // a poll's deadline: its caller says what it waited for
	}
	n := 0
	for _, p := range pods.Items {
		if strings.HasPrefix(p.Name, prefix+"-") && p.Spec.NodeName != "" {
			n++
		}
	}
	return n
}

func waitGangBound(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane, prefix string, want int) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return boundMembers(t, ctx, cp, prefix) == want, nil
	}); err != nil {
		t.Fatalf("%s: %d members bound, want %d", prefix, boundMembers(t, context.WithoutCancel(ctx), cp, prefix), want)
	}
}

// stayUnbound checks, over a few seconds, that none of the gang binds.
func stayUnbound(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane, prefix string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if n := boundMembers(t, ctx, cp, prefix); n > 0 {
			t.Fatalf("%s: %d members bound while the gang is short", prefix, n)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// A gang of 8 on room for 6 binds nothing, and after its timeout holds
// nothing: three pods that need all the room are placed. With room for 8
// (a node added), all 8 bind together.
func TestCoschedulingAllOrNothing(t *testing.T) {
	ctx := testContext(t)
	cp := startControlPlane(t, controlplane.Options{})
	gangNodes(t, ctx, cp, "gang", 3)
	startScheduler(t, ctx, cp, []byte(coschedulingConfig))
	podGroup(t, ctx, cp, "train", 8, 3)
	members(t, ctx, cp, "train", 8, map[string]string{extension.LabelPodGroup: "train"}, nil)
	waitEventIn(t, ctx, cp, "default", "FailedScheduling", "gang default/train")
	stayUnbound(t, ctx, cp, "train", 5*time.Second)
	// Nothing held: every node's 2 CPUs go to a pod that needs them all.
	for i := 0; i < 3; i++ {
		if _, err := cp.CreatePod(ctx, controlplane.PodSpec{Name: fmt.Sprintf("whole-%d", i), SchedulerName: "koord-scheduler", CPU: "2", Memory: "64Mi"}); err != nil {
			t.Fatal(err)
		}
	}
	waitGangBound(t, ctx, cp, "whole", 3)
	if n := boundMembers(t, ctx, cp, "train"); n > 0 {
		t.Fatalf("%d gang members bound", n)
	}
	for i := 0; i < 3; i++ {
		if err := cp.Client.CoreV1().Pods("default").Delete(ctx, fmt.Sprintf("whole-%d", i), metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
			t.Fatal(err)
		}
	}
	gangNodes(t, ctx, cp, "more", 1)
	waitGangBound(t, ctx, cp, "train", 8)

	// koord-manager keeps the PodGroup's status: Scheduled, then Running.
	startManager(t, ctx, cp, 0)
	waitPodGroup(t, ctx, cp, "train", schedulingsigsv1alpha1.PodGroupScheduled, func(st schedulingsigsv1alpha1.PodGroupStatus) bool { return st.Scheduled == 8 })
	for i := 0; i < 8; i++ {
		pod, err := cp.Client.CoreV1().Pods("default").Get(ctx, fmt.Sprintf("train-%d", i), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pod.Status.Phase = corev1.PodRunning
		if _, err := cp.Client.CoreV1().Pods("default").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitPodGroup(t, ctx, cp, "train", schedulingsigsv1alpha1.PodGroupRunning, func(st schedulingsigsv1alpha1.PodGroupStatus) bool {
		return st.Running == 8 && !st.ScheduleStartTime.IsZero()
	})
}

func waitPodGroup(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane, name string, phase schedulingsigsv1alpha1.PodGroupPhase, ok func(schedulingsigsv1alpha1.PodGroupStatus) bool) {
	t.Helper()
	var last schedulingsigsv1alpha1.PodGroupStatus
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		pg, err := cp.Koord.SchedulingSigsV1alpha1().PodGroups("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = pg.Status
		return pg.Status.Phase == phase && ok(pg.Status), nil
	}); err != nil {
		t.Fatalf("PodGroup %s status %+v, want phase %s", name, last, phase)
	}
}

// Two gangs of 6 on room for 8 never deadlock: one completes (either: the
// queue may take b's members first), the other holds nothing while it
// cannot, and completes when the first is gone.
func TestCoschedulingTwoGangs(t *testing.T) {
	ctx := testContext(t)
	cp := startControlPlane(t, controlplane.Options{})
	gangNodes(t, ctx, cp, "gang", 4)
	startScheduler(t, ctx, cp, []byte(coschedulingConfig))
	podGroup(t, ctx, cp, "a", 6, 3)
	podGroup(t, ctx, cp, "b", 6, 3)
	members(t, ctx, cp, "a", 6, map[string]string{extension.LabelPodGroup: "a"}, nil)
	members(t, ctx, cp, "b", 6, map[string]string{extension.LabelPodGroup: "b"}, nil)
	winner, loser := "", ""
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		switch {
		case boundMembers(t, ctx, cp, "a") == 6:
			winner, loser = "a", "b"
		case boundMembers(t, ctx, cp, "b") == 6:
			winner, loser = "b", "a"
		}
		return winner != "", nil
	}); err != nil {
		t.Fatalf("neither gang completed: a %d, b %d bound", boundMembers(t, context.WithoutCancel(ctx), cp, "a"), boundMembers(t, context.WithoutCancel(ctx), cp, "b"))
	}
	stayUnbound(t, ctx, cp, loser, 5*time.Second)
	// b's members hold nothing: the 2 CPUs a left free take two pods.
	for _, name := range []string{"free-0", "free-1"} {
		if _, err := cp.CreatePod(ctx, controlplane.PodSpec{Name: name, SchedulerName: "koord-scheduler", CPU: "1", Memory: "64Mi"}); err != nil {
			t.Fatal(err)
		}
	}
	waitGangBound(t, ctx, cp, "free", 2)
	gone := []string{"free-0", "free-1"}
	for i := 0; i < 6; i++ {
		gone = append(gone, fmt.Sprintf("%s-%d", winner, i))
	}
	for _, name := range gone {
		if err := cp.Client.CoreV1().Pods("default").Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
			t.Fatal(err)
		}
	}
	waitGangBound(t, ctx, cp, loser, 6)
}

// A member that finds no node: in Strict mode (the default) the members
// waiting at Permit are released at once; in NonStrict mode they keep
// waiting, and a replacement member completes the gang. Gangs here are
// declared by Koordinator's annotations alone.
func TestCoschedulingStrictAndNonStrict(t *testing.T) {
	ctx := testContext(t)
	cp := startControlPlane(t, controlplane.Options{})
	gangNodes(t, ctx, cp, "gang", 2)
	startScheduler(t, ctx, cp, []byte(coschedulingConfig))
	for _, mode := range []string{extension.GangModeStrict, extension.GangModeNonStrict} {
		gang := strings.ToLower(mode)
		ann := map[string]string{extension.AnnotationGangName: gang, extension.AnnotationGangMinNum: "3", extension.AnnotationGangMode: mode, extension.AnnotationGangWaitTime: "60s"}
		members(t, ctx, cp, gang, 2, nil, ann)
		// The third member asks for a node that does not exist.
		bad, err := controlplane.MakePod(controlplane.PodSpec{Name: gang + "-2", SchedulerName: "koord-scheduler", CPU: "1", Memory: "64Mi", Annotations: ann})
		if err != nil {
			t.Fatal(err)
		}
		bad.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": "nowhere"}
		if _, err := cp.Client.CoreV1().Pods("default").Create(ctx, bad, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitEventIn(t, ctx, cp, "default", "FailedScheduling", "didn't match Pod's node affinity/selector")
		if mode == extension.GangModeStrict {
			waitEventIn(t, ctx, cp, "default", "FailedScheduling", "gang default/strict (Strict): member strict-2 found no node")
		} else {
			stayUnbound(t, ctx, cp, gang, 3*time.Second)
		}
		if err := cp.Client.CoreV1().Pods("default").Delete(ctx, gang+"-2", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
			t.Fatal(err)
		}
		if _, err := cp.CreatePod(ctx, controlplane.PodSpec{Name: gang + "-2", SchedulerName: "koord-scheduler", CPU: "1", Memory: "64Mi", Annotations: ann}); err != nil {
			t.Fatal(err)
		}
		waitGangBound(t, ctx, cp, gang, 3)
		if mode == extension.GangModeNonStrict {
			// The first two waited through it all: none was ever rejected.
			evs, err := cp.Client.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range evs.Items {
				// (Before their third sibling existed, PreFilter turned
				// them away: "has 2 of the 3 pods"; that is not a release.)
				if e.Reason == "FailedScheduling" && (e.InvolvedObject.Name == "nonstrict-0" || e.InvolvedObject.Name == "nonstrict-1") &&
					(strings.Contains(e.Message, "found no node") || strings.Contains(e.Message, "released")) {
					t.Errorf("a NonStrict member was released: %s: %s", e.InvolvedObject.Name, e.Message)
				}
			}
		}
		for i := 0; i < 3; i++ {
			_ = cp.Client.CoreV1().Pods("default").Delete(ctx, fmt.Sprintf("%s-%d", gang, i), metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		}
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			pods, err := cp.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
			return err == nil && len(pods.Items) == 0, nil
		}); err != nil {
			t.Fatal("pods not deleted")
		}
	}
}

// A malformed gang annotation leaves the pod pending with a message naming
// the key; a gang whose pods are fewer than minMember says so.
func TestCoschedulingBadGangs(t *testing.T) {
	ctx := testContext(t)
	cp := startControlPlane(t, controlplane.Options{})
	gangNodes(t, ctx, cp, "gang", 2)
	startScheduler(t, ctx, cp, []byte(coschedulingConfig))
	members(t, ctx, cp, "typo", 1, nil, map[string]string{extension.AnnotationGangName: "typo", extension.AnnotationGangMinNum: "eight"})
	waitEventIn(t, ctx, cp, "default", "FailedScheduling", `annotation gang.scheduling.koordinator.sh/min-available: "eight" is not a non-negative int32`)
	members(t, ctx, cp, "short", 2, nil, map[string]string{extension.AnnotationGangName: "short", extension.AnnotationGangMinNum: "3"})
	// Short members wait outside the queue; the gang's shortage is an
	// Event (once a minute, with the count when it was said).
	waitEventIn(t, ctx, cp, "default", "FailedScheduling", "of the 3 pods minMember needs")
	if _, err := cp.Client.CoreV1().Pods("default").Get(ctx, "typo-0", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := boundMembers(t, ctx, cp, "typo") + boundMembers(t, ctx, cp, "short"); n != 0 {
		t.Errorf("%d pods of bad gangs bound", n)
	}
	// The third pod of "short" arrives: the gang is whole and binds.
	members(t, ctx, cp, "late", 1, nil, map[string]string{extension.AnnotationGangName: "short", extension.AnnotationGangMinNum: "3"})
	waitGangBound(t, ctx, cp, "short", 2)
	waitGangBound(t, ctx, cp, "late", 1)
}

// Gangs of a group (annotation groups) bind only when every gang of the
// group is whole: g1's members wait for g2's.
func TestCoschedulingGroups(t *testing.T) {
	ctx := testContext(t)
	cp := startControlPlane(t, controlplane.Options{})
	gangNodes(t, ctx, cp, "gang", 2)
	startScheduler(t, ctx, cp, []byte(coschedulingConfig))
	ann := func(name string) map[string]string {
		return map[string]string{extension.AnnotationGangName: name, extension.AnnotationGangMinNum: "2", extension.AnnotationGangWaitTime: "60s",
			extension.AnnotationGangGroups: `["default/g1","default/g2"]`}
	}
	members(t, ctx, cp, "g1", 2, nil, ann("g1"))
	stayUnbound(t, ctx, cp, "g1", 3*time.Second)
	members(t, ctx, cp, "g2", 2, nil, ann("g2"))
	waitGangBound(t, ctx, cp, "g1", 2)
	waitGangBound(t, ctx, cp, "g2", 2)
}
