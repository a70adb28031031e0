package recommender

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	analysisv1alpha1 "github.com/koord-project/koord/apis/analysis/v1alpha1"
	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
)

// Options configure the recommender's controllers.
type Options struct {
	Config Config
	// Interval is how often a Recommendation is recomputed (default 1m).
	Interval time.Duration
	// CheckpointInterval is how often its histograms are written to its
	// status (default 10m); a restart loses at most this much history.
	CheckpointInterval time.Duration
	Metrics            *Metrics
}

// Recommender feeds the model from NodeMetrics and pods and writes each
// Recommendation's status.
type Recommender struct {
	Client   client.Client
	Recorder record.EventRecorder
	Model    *Model
	Options  Options
	// started: OOM kills before it are already in the checkpoints.
	started time.Time

	mu         sync.Mutex
	seen       map[string]time.Time // each node's last NodeMetric update consumed
	checkpoint map[types.NamespacedName]time.Time
}

// Setup registers the recommender's controllers and pod handler with mgr.
func Setup(ctx context.Context, mgr ctrl.Manager, o Options) (*Recommender, error) {
	if err := o.Config.Validate(); err != nil {
		return nil, err
	}
	if o.Interval <= 0 {
		o.Interval = time.Minute
	}
	if o.CheckpointInterval <= 0 {
		o.CheckpointInterval = 10 * time.Minute
	}
	r := &Recommender{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorderFor("koord-manager"), Model: NewModel(o.Config), Options: o,
		started: time.Now(), seen: map[string]time.Time{}, checkpoint: map[types.NamespacedName]time.Time{}}
	if err := ctrl.NewControllerManagedBy(mgr).Named("recommendation").For(&analysisv1alpha1.Recommendation{}).
		Complete(reconcile.Func(r.reconcileRecommendation)); err != nil {
		return nil, err
	}
	if err := ctrl.NewControllerManagedBy(mgr).Named("recommendation-samples").For(&slov1alpha1.NodeMetric{}).
		Complete(reconcile.Func(r.reconcileNodeMetric)); err != nil {
		return nil, err
	}
	inf, err := mgr.GetCache().GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return nil, err
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj any) {
			oldPod, ok1 := oldObj.(*corev1.Pod)
			newPod, ok2 := newObj.(*corev1.Pod)
			if ok1 && ok2 {
				r.observeOOMs(ctx, oldPod, newPod)
			}
		},
		DeleteFunc: func(obj any) {
			if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				r.Model.ForgetPod(pod.UID)
			}
		},
	})
	return r, err
}

// reconcileNodeMetric turns a NodeMetric's new report into samples. A
// NodeMetric is written by its node's koordlet, so nothing in it is taken
// on trust: a pod counts only if the API says it runs on that node, a
// container only if the pod has it, a figure only if it fits the node.
func (r *Recommender) reconcileNodeMetric(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	nm := &slov1alpha1.NodeMetric{}
	if err := r.Client.Get(ctx, req.NamespacedName, nm); err != nil {
		if apierrors.IsNotFound(err) {
			r.mu.Lock()
			delete(r.seen, req.Name)
			r.mu.Unlock()
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if nm.Status.UpdateTime == nil {
		return ctrl.Result{}, nil
	}
	at := nm.Status.UpdateTime.Time
	r.mu.Lock()
	fresh := at.After(r.seen[req.Name])
	if fresh {
		r.seen[req.Name] = at
	}
	r.mu.Unlock()
	if !fresh {
		return ctrl.Result{}, nil
	}
	node := &corev1.Node{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: req.Name}, node); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	start := at.Add(-nm.Spec.CollectPolicy.ReportInterval())
	maxCPU, maxMem := node.Status.Capacity.Cpu().AsApproximateFloat64(), node.Status.Capacity.Memory().AsApproximateFloat64()
	recs := map[string][]*analysisv1alpha1.Recommendation{}
	for _, pm := range nm.Status.PodsMetric {
		if pm == nil || len(pm.ContainersMetric) == 0 {
			continue
		}
		list, ok := recs[pm.Namespace]
		if !ok {
			var err error
			if list, err = r.tracked(ctx, pm.Namespace); err != nil {
				return ctrl.Result{}, err
			}
			recs[pm.Namespace] = list
		}
		if len(list) == 0 {
			continue
		}
		pod := &corev1.Pod{}
		if err := r.Client.Get(ctx, types.NamespacedName{Namespace: pm.Namespace, Name: pm.Name}, pod); err != nil || pod.Spec.NodeName != req.Name {
			r.Options.Metrics.sample("pod-not-on-node", len(pm.ContainersMetric))
			continue
		}
		covering := r.covering(ctx, list, pod)
		if len(covering) == 0 {
			continue
		}
		for _, cm := range pm.ContainersMetric {
			spec := containerSpec(pod, cm.Name)
			cpu, mem := cm.ContainerUsage.Cpu().AsApproximateFloat64(), cm.ContainerUsage.Memory().AsApproximateFloat64()
			switch {
			case spec == nil:
				r.Options.Metrics.sample("unknown-container", 1)
				continue
			case cpu < 0 || mem < 0 || cpu > maxCPU || mem > maxMem:
				r.Options.Metrics.sample("beyond-node-capacity", 1)
				continue
			}
			for _, rec := range covering {
				if r.Model.Add(client.ObjectKeyFromObject(rec), Sample{Pod: pod.UID, PodAt: pod.CreationTimestamp.Time, Container: cm.Name,
					Requests: spec.Resources.Requests, Start: start, CPU: cpu, Memory: mem}) {
					r.Options.Metrics.sample("accepted", 1)
				} else {
					r.Options.Metrics.sample("stale", 1)
				}
			}
		}
	}
	return ctrl.Result{}, nil
}

// tracked lists the namespace's Recommendations the model tracks (those
// whose checkpoints are loaded: samples before that would be lost).
func (r *Recommender) tracked(ctx context.Context, ns string) ([]*analysisv1alpha1.Recommendation, error) {
	var list analysisv1alpha1.RecommendationList
	if err := r.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	var out []*analysisv1alpha1.Recommendation
	for i := range list.Items {
		if r.Model.Tracked(client.ObjectKeyFromObject(&list.Items[i])) {
			out = append(out, &list.Items[i])
		}
	}
	return out, nil
}

func containerSpec(pod *corev1.Pod, name string) *corev1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	return nil
}

// covering are the Recommendations among recs whose target holds pod.
func (r *Recommender) covering(ctx context.Context, recs []*analysisv1alpha1.Recommendation, pod *corev1.Pod) []*analysisv1alpha1.Recommendation {
	var chain []metav1.OwnerReference
	chained := false
	var out []*analysisv1alpha1.Recommendation
	for _, rec := range recs {
		t := rec.Spec.Target
		switch t.Type {
		case analysisv1alpha1.RecommendationPodSelector:
			sel, err := metav1.LabelSelectorAsSelector(t.PodSelector)
			if err == nil && t.PodSelector != nil && sel.Matches(labels.Set(pod.Labels)) {
				out = append(out, rec)
			}
		case analysisv1alpha1.RecommendationTargetWorkload:
			if t.Workload == nil {
				continue
			}
			if !chained {
				chain, chained = r.owners(ctx, pod), true
			}
			for _, o := range chain {
				if o.Kind == t.Workload.Kind && o.Name == t.Workload.Name && sameGroup(o.APIVersion, t.Workload.APIVersion) {
					out = append(out, rec)
					break
				}
			}
		}
	}
	return out
}

// owners is the pod's controller and, when that is a ReplicaSet or a Job,
// their controller: a Deployment's pods belong to it through a ReplicaSet,
// a CronJob's through a Job.
func (r *Recommender) owners(ctx context.Context, pod *corev1.Pod) []metav1.OwnerReference {
	ref := metav1.GetControllerOf(pod)
	if ref == nil {
		return nil
	}
	chain := []metav1.OwnerReference{*ref}
	gv, _ := schema.ParseGroupVersion(ref.APIVersion)
	if (gv.Group == "apps" && ref.Kind == "ReplicaSet") || (gv.Group == "batch" && ref.Kind == "Job") {
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(gv.WithKind(ref.Kind))
		if err := r.Client.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: ref.Name}, m); err == nil {
			if up := metav1.GetControllerOf(m); up != nil {
				chain = append(chain, *up)
			}
		}
	}
	return chain
}

// sameGroup: a workload named without an apiVersion matches any group.
func sameGroup(a, b string) bool {
	if b == "" {
		return true
	}
	ga, _ := schema.ParseGroupVersion(a)
	gb, _ := schema.ParseGroupVersion(b)
	return ga.Group == gb.Group
}

// checkTarget names what is wrong with a target, for the Ready condition.
func checkTarget(t analysisv1alpha1.RecommendationTarget) error {
	switch t.Type {
	case analysisv1alpha1.RecommendationTargetWorkload:
		if t.Workload == nil || t.Workload.Kind == "" || t.Workload.Name == "" {
			return fmt.Errorf("spec.target.workload: type workload needs a kind and a name")
		}
		if t.Workload.APIVersion != "" {
			if _, err := schema.ParseGroupVersion(t.Workload.APIVersion); err != nil {
				return fmt.Errorf("spec.target.workload.apiVersion: %v", err)
			}
		}
	case analysisv1alpha1.RecommendationPodSelector:
		if t.PodSelector == nil {
			return fmt.Errorf("spec.target.podSelector: type podSelector needs a selector")
		}
		if _, err := metav1.LabelSelectorAsSelector(t.PodSelector); err != nil {
			return fmt.Errorf("spec.target.podSelector: %v", err)
		}
	default:
		return fmt.Errorf("spec.target.type %q: want workload or podSelector", t.Type)
	}
	return nil
}

// reconcileRecommendation loads a Recommendation's checkpoints once,
// recomputes it every Interval and writes its status when the result
// changes or a checkpoint is due.
func (r *Recommender) reconcileRecommendation(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	rec := &analysisv1alpha1.Recommendation{}
	if err := r.Client.Get(ctx, req.NamespacedName, rec); err != nil {
		if apierrors.IsNotFound(err) {
			r.Model.Forget(req.NamespacedName)
			r.Options.Metrics.forget(req.NamespacedName)
			r.mu.Lock()
			delete(r.checkpoint, req.NamespacedName)
			r.mu.Unlock()
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	st := rec.Status.DeepCopy()
	now := metav1.Now()
	if err := checkTarget(rec.Spec.Target); err != nil {
		r.Model.Forget(req.NamespacedName)
		r.Options.Metrics.forget(req.NamespacedName)
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: analysisv1alpha1.RecommendationConditionReady, Status: metav1.ConditionFalse,
			Reason: "InvalidTarget", Message: err.Error(), ObservedGeneration: rec.Generation})
		st.PodStatus = nil
		return ctrl.Result{}, r.writeStatus(ctx, rec, st)
	}
	if !r.Model.Tracked(req.NamespacedName) {
		if err := r.Model.Track(req.NamespacedName, rec.Status.Checkpoints); err != nil {
			r.Recorder.Eventf(rec, corev1.EventTypeWarning, "CheckpointDropped", "starting those containers afresh: %v", err)
		}
		r.mu.Lock()
		r.checkpoint[req.NamespacedName] = now.Time
		r.mu.Unlock()
	}
	res, _ := r.Model.Recommend(req.NamespacedName)
	cond := metav1.Condition{Type: analysisv1alpha1.RecommendationConditionReady, Status: metav1.ConditionFalse, Reason: res.Reason, Message: res.Message, ObservedGeneration: rec.Generation}
	if res.Ready {
		cond.Status = metav1.ConditionTrue
		st.PodStatus = &analysisv1alpha1.RecommendedPodStatus{ContainerStatuses: res.Containers}
	}
	meta.SetStatusCondition(&st.Conditions, cond)
	r.Options.Metrics.set(req.NamespacedName, res)
	aggs, containers := r.Model.Size()
	r.Options.Metrics.size(aggs, containers)

	r.mu.Lock()
	due := now.Sub(r.checkpoint[req.NamespacedName]) >= r.Options.CheckpointInterval
	r.mu.Unlock()
	changed := !apiequality.Semantic.DeepEqual(st.PodStatus, rec.Status.PodStatus) || !apiequality.Semantic.DeepEqual(st.Conditions, rec.Status.Conditions)
	if changed || due {
		if due || len(rec.Status.Checkpoints) == 0 {
			cps, err := r.Model.Checkpoints(req.NamespacedName)
			if err != nil {
				return ctrl.Result{}, err
			}
			st.Checkpoints = cps
			r.mu.Lock()
			r.checkpoint[req.NamespacedName] = now.Time
			r.mu.Unlock()
		}
		st.UpdateTime = &now
		if err := r.writeStatus(ctx, rec, st); err != nil {
			return ctrl.Result{}, err
		}
	}
	if res.Ready && rec.Spec.UpdatePolicy != nil && rec.Spec.UpdatePolicy.UpdateMode == analysisv1alpha1.UpdateModeInPlace {
		if err := r.resize(ctx, rec, res); err != nil {
			log.FromContext(ctx).Error(err, "Resizing the target's pods", "recommendation", req.NamespacedName)
		}
	}
	return ctrl.Result{RequeueAfter: r.Options.Interval}, nil
}

func (r *Recommender) writeStatus(ctx context.Context, rec *analysisv1alpha1.Recommendation, st *analysisv1alpha1.RecommendationStatus) error {
	if apiequality.Semantic.DeepEqual(*st, rec.Status) {
		return nil
	}
	out := rec.DeepCopy()
	out.Status = *st
	return r.Client.Status().Update(ctx, out)
}

// observeOOMs records each container of newPod newly OOM-killed: its last
// termination (it restarted) or its current state (it did not), once.
func (r *Recommender) observeOOMs(ctx context.Context, oldPod, newPod *corev1.Pod) {
	for _, cs := range newPod.Status.ContainerStatuses {
		term := oomKill(cs)
		if term == nil || !term.FinishedAt.After(r.started) {
			continue
		}
		if prev := findStatus(oldPod, cs.Name); prev != nil {
			if pt := oomKill(*prev); pt != nil && pt.FinishedAt.Equal(&term.FinishedAt) {
				continue
			}
		}
		spec := containerSpec(newPod, cs.Name)
		if spec == nil {
			continue
		}
		memory := spec.Resources.Limits.Memory()
		if memory.IsZero() {
			memory = spec.Resources.Requests.Memory()
		}
		if memory.IsZero() {
			continue
		}
		recs, err := r.tracked(ctx, newPod.Namespace)
		if err != nil {
			continue
		}
		for _, rec := range r.covering(ctx, recs, newPod) {
			if err := r.Model.OOM(client.ObjectKeyFromObject(rec), newPod.UID, cs.Name, spec.Resources.Requests, term.FinishedAt.Time, memory.AsApproximateFloat64()); err == nil {
				r.Options.Metrics.oom()
			}
		}
	}
}

func oomKill(cs corev1.ContainerStatus) *corev1.ContainerStateTerminated {
	if t := cs.State.Terminated; t != nil && t.Reason == "OOMKilled" {
		return t
	}
	if t := cs.LastTerminationState.Terminated; t != nil && t.Reason == "OOMKilled" {
		return t
	}
	return nil
}

func findStatus(pod *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == name {
			return &pod.Status.ContainerStatuses[i]
		}
	}
	return nil
}
