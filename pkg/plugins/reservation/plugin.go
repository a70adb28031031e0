// Package reservation implements the Reservation plugin: an Available
// Reservation's resources are held on its node against every pod but its
// owners, which consume them; a Reservation is placed by scheduling its
// placeholder pod. See README.md.
package reservation

import (
	"fmt"

	"github.com/koord-project/koord/apis/config"
	"github.com/koord-project/koord/apis/config/validation"

	"context"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	schedulingv1alpha1 "github.com/koord-project/koord/apis/scheduling/v1alpha1"
	koordclientset "github.com/koord-project/koord/pkg/client/clientset/versioned"
	"github.com/koord-project/koord/pkg/client/lenient"
	"github.com/koord-project/koord/pkg/scheduler/frameworkext"
)

// Name is the plugin's name in profiles.
const Name = "Reservation"

// stateKey is shared: the pod's state is also its frameworkext.Holds, which
// NodeNUMAResource and LoadAwareScheduling read.
const stateKey = frameworkext.HoldsStateKey

var (
	_ fwk.PreFilterPlugin   = &Plugin{}
	_ fwk.FilterPlugin      = &Plugin{}
	_ fwk.PreScorePlugin    = &Plugin{}
	_ fwk.ScorePlugin       = &Plugin{}
	_ fwk.ReservePlugin     = &Plugin{}
	_ fwk.PreBindPlugin     = &Plugin{}
	_ fwk.BindPlugin        = &Plugin{}
	_ fwk.EnqueueExtensions = &Plugin{}
)

// Plugin holds Available reservations' resources for their owners, lets
// owners consume them, and turns placeholder pods into Available
// reservations (see reservationutil.PlaceholderAnnotation).
type Plugin struct {
	handle fwk.Handle
	ext    *frameworkext.Extender
	koord  koordclientset.Interface
	cache  *Cache
	logger klog.Logger

	synced []cache.InformerSynced
	ready  atomic.Bool

	// rejected are the pods Filter turned away, tried again when a
	// reservation or a consumer changes.
	rejected frameworkext.Rejected

	// binding says whether the profile binds with frameworkext.Bind
	// (reservation-allocated rides on the Binding) or needs the PreBind patch.
	binding frameworkext.CarriedOnce
}

func (p *Plugin) Name() string { return Name }

// New watches Reservations (the extender's informer) and the scheduler's
// pods, and feeds the cache from them, so that a restarted scheduler
// rebuilds it from the API server.
func New(ctx context.Context, obj runtime.Object, h fwk.Handle, ext *frameworkext.Extender) (fwk.Plugin, error) {
	// Koordinator's ReservationArgs are accepted and kept, and named when
	// set: none changes what the plugin does yet.
	if obj != nil {
		args, ok := obj.(*config.ReservationArgs)
		if !ok {
			return nil, fmt.Errorf("want args of type ReservationArgs, got %T", obj)
		}
		if err := validation.ValidateReservationArgs(nil, args); err != nil {
			return nil, err
		}
		frameworkext.ReportArgsNotActedOn(klog.FromContext(ctx).WithName(Name), Name, args.NotActedOn())
	}
	client, err := ext.Koord(h)
	if err != nil {
		return nil, err
	}
	factory, err := ext.Informers(h)
	if err != nil {
		return nil, err
	}
	p := newPlugin(h, ext, client, klog.FromContext(ctx).WithName(Name))
	rInformer := factory.Scheduling().V1alpha1().Reservations().Informer()
	rReg, err := rInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { p.onReservation(obj) },
		UpdateFunc: func(_, obj any) { p.onReservation(obj) },
		DeleteFunc: p.onReservationDelete,
	})
	if err != nil {
		return nil, err
	}
	podReg, err := h.SharedInformerFactory().Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    p.onPod,
		UpdateFunc: func(_, obj any) { p.onPod(obj) },
		DeleteFunc: p.onPodDelete,
	})
	if err != nil {
		return nil, err
	}
	p.synced = []cache.InformerSynced{rReg.HasSynced, podReg.HasSynced}
	ext.Start(ctx)
	// A deadline, not a wait for ever: the scheduler then exits naming
	// what did not sync, and its Deployment's restarts show it.
	if err := lenient.WaitForSync(ctx, frameworkext.SyncTimeout, Name+": the Reservation informer", rInformer.HasSynced); err != nil {
		return nil, err
	}
	return p, nil
}

// newPlugin is the plugin before it watches anything (tests start here).
func newPlugin(h fwk.Handle, ext *frameworkext.Extender, client koordclientset.Interface, logger klog.Logger) *Plugin {
	ext.RegisterBinder(Name)
	return &Plugin{handle: h, ext: ext, koord: client, cache: NewCache(), logger: logger}
}

func (p *Plugin) onReservation(obj any) {
	if r := asReservation(obj); r != nil {
		p.setReservation(p.logger, r)
		p.changed()
	}
}

func (p *Plugin) setReservation(logger klog.Logger, r *schedulingv1alpha1.Reservation) {
	if err := p.cache.SetReservation(r); err != nil {
		logger.Error(err, "Keeping the CPUs the reservation pinned before", "reservation", r.Name)
	}
}

func (p *Plugin) onReservationDelete(obj any) {
	if r := asReservation(obj); r != nil {
		p.cache.DeleteReservation(r.UID)
		p.changed()
	}
}

// changed lets the pods that were turned away try again, this plugin's and
// (through the extender) those other plugins turned away for what
// reservations held.
func (p *Plugin) changed() {
	p.rejected.Activate(p.logger, p.handle)
	p.ext.HoldsChanged()
}

func asReservation(obj any) *schedulingv1alpha1.Reservation {
	switch o := obj.(type) {
	case *schedulingv1alpha1.Reservation:
		return o
	case cache.DeletedFinalStateUnknown:
		return asReservation(o.Obj)
	}
	return nil
}

// EventsToRegister: a pod that leaves can make room beside reservations.
// Reservations themselves are watched by the plugin, which requeues the
// pods it turned away once its cache has the change (see changed).
func (p *Plugin) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.AssignedPod, ActionType: fwk.Delete}},
	}, nil
}

func (p *Plugin) onPod(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if pod.Spec.NodeName != "" {
		p.rejected.Forget(pod.UID)
	}
	if !p.ext.BoundHere(pod) {
		// Its reservation-allocated, if any, is not this scheduler's
		// record: a pod created with spec.nodeName and the annotation
		// would otherwise take a reservation's room without being placed.
		return
	}
	if p.cache.ObservePod(pod) {
		p.changed()
	}
}

func (p *Plugin) onPodDelete(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if pod, ok := obj.(*corev1.Pod); ok {
		p.rejected.Forget(pod.UID)
		if p.cache.ForgetPod(pod.UID) {
			p.changed()
		}
	}
}

func podRequests(pod *corev1.Pod) corev1.ResourceList {
	return resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
}
