package coscheduling

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/ptr"

	"github.com/koord-project/koord/apis/config"
	"github.com/koord-project/koord/apis/extension"
	schedulingsigsv1alpha1 "github.com/koord-project/koord/apis/schedulingsigs/v1alpha1"
	sigslisters "github.com/koord-project/koord/pkg/client/listers/schedulingsigs/v1alpha1"
)

func testPlugin(t *testing.T, pgs ...*schedulingsigsv1alpha1.PodGroup) *Plugin {
	t.Helper()
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, pg := range pgs {
		if err := idx.Add(pg); err != nil {
			t.Fatal(err)
		}
	}
	return &Plugin{args: config.CoschedulingArgs{DefaultTimeout: metav1.Duration{Duration: 10 * time.Minute}, DefaultMatchPolicy: extension.GangMatchOnceSatisfied},
		podGroups: sigslisters.NewPodGroupLister(idx), satisfied: map[string]bool{}, failed: map[string]*corev1.Pod{}}
}

func pod(labels, annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "w-0", Labels: labels, Annotations: annotations}}
}

// What a pod's gang is, from the PodGroup, its annotations, the pod's own
// annotations (which win) and the args' defaults.
func TestGangOf(t *testing.T) {
	pg := &schedulingsigsv1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "train", UID: "pg-uid",
		Annotations: map[string]string{extension.AnnotationGangMode: extension.GangModeNonStrict, extension.AnnotationGangGroups: `["ml/train","ml/eval"]`}},
		Spec: schedulingsigsv1alpha1.PodGroupSpec{MinMember: 8, ScheduleTimeoutSeconds: ptr.To[int32](120)}}
	p := testPlugin(t, pg)

	g, st := p.gangOf(pod(map[string]string{extension.LabelPodGroup: "train"}, nil))
	if st != nil || g == nil {
		t.Fatalf("PodGroup gang: %v", st)
	}
	if g.key != "ml/train" || g.uid != "pg-uid" || g.minMember != 8 || g.timeout != 2*time.Minute || g.mode != extension.GangModeNonStrict ||
		g.matchPolicy != extension.GangMatchOnceSatisfied || strings.Join(g.groups, ",") != "ml/train,ml/eval" {
		t.Errorf("PodGroup gang %+v", g)
	}
	// The pod's own annotations win over the PodGroup's.
	if g, _ := p.gangOf(pod(map[string]string{extension.LabelPodGroup: "train"}, map[string]string{extension.AnnotationGangMode: extension.GangModeStrict})); g.mode != extension.GangModeStrict {
		t.Errorf("pod's mode lost to the PodGroup's: %+v", g)
	}
	// Annotations alone: defaults from the args, Strict, itself as its group.
	g, st = p.gangOf(pod(nil, map[string]string{extension.AnnotationGangName: "solo", extension.AnnotationGangMinNum: "3"}))
	if st != nil || g.minMember != 3 || g.timeout != 10*time.Minute || g.mode != extension.GangModeStrict || strings.Join(g.groups, ",") != "ml/solo" {
		t.Errorf("annotation gang %+v, %v", g, st)
	}
	if g, st := p.gangOf(pod(nil, nil)); g != nil || st != nil {
		t.Errorf("a pod without a gang: %+v, %v", g, st)
	}
	for name, c := range map[string]struct {
		p    *Plugin
		pod  *corev1.Pod
		want string
	}{
		"no min-available":  {p, pod(nil, map[string]string{extension.AnnotationGangName: "solo"}), "annotation gang.scheduling.koordinator.sh/min-available is required"},
		"bad mode":          {p, pod(nil, map[string]string{extension.AnnotationGangName: "solo", extension.AnnotationGangMinNum: "3", extension.AnnotationGangMode: "Loose"}), extension.AnnotationGangMode},
		"other namespace":   {p, pod(nil, map[string]string{extension.AnnotationGangName: "solo", extension.AnnotationGangMinNum: "3", extension.AnnotationGangGroups: `["ml/solo","team-b/theirs"]`}), "names team-b/theirs, a gang of another namespace"},
		"missing PodGroup":  {p, pod(map[string]string{extension.LabelPodGroup: "gone"}, nil), "PodGroup ml/gone"},
		"no PodGroup CRD":   {&Plugin{args: p.args}, pod(map[string]string{extension.LabelPodGroup: "train"}, nil), "the PodGroup CRD is not installed"},
		"bad PodGroup ann.": {testPlugin(t, &schedulingsigsv1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "train", Annotations: map[string]string{extension.AnnotationGangGroups: "[7]"}}}), pod(map[string]string{extension.LabelPodGroup: "train"}, nil), "PodGroup ml/train: annotation gang.scheduling.koordinator.sh/groups"},
	} {
		_, st := c.p.gangOf(c.pod)
		if st.Code() != fwk.UnschedulableAndUnresolvable || !strings.Contains(st.Message(), c.want) {
			t.Errorf("%s: %v, want UnschedulableAndUnresolvable naming %q", name, st, c.want)
		}
	}
}
