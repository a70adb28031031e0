// Package lenient lists and watches a custom resource one object at a time,
// so that one object the typed decoder refuses (a Reservation with
// ttl: "banana", written before its CRD's schema checked durations) is
// skipped and reported instead of failing the whole list: with the
// generated typed informers, one such object keeps every cache from ever
// syncing, and everything waiting on it waits forever.
//
// The objects come through the dynamic client (decoding JSON into
// unstructured maps cannot fail on a field's value) and are converted to the
// typed object one by one, after their quantities are checked to be within
// the bounds a CRD's schema allows today (extension.CheckQuantities): an
// object stored before it, or through a looser schema, is refused in time
// linear in its size instead of stalling the watch.
package lenient

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"

	"github.com/koord-project/koord/apis/extension"
)

// Kind says how to build the typed objects of one resource.
type Kind struct {
	Resource schema.GroupVersionResource
	// New and NewList return an empty object and list of the typed kind.
	New     func() runtime.Object
	NewList func() runtime.Object
}

// Refused is called for each object that does not decode into the typed
// kind, with the error naming the field. It is called again each time the
// object is listed or changes, so callers report it once per change.
type Refused func(obj *unstructured.Unstructured, err error)

// ListWatch lists and watches k through dyn (with tweak applied to the list
// options, as the generated factories' WithTweakListOptions does), skipping
// the objects refused reports.
func ListWatch(dyn dynamic.Interface, k Kind, tweak func(*metav1.ListOptions), refused Refused) *cache.ListWatch {
	res := dyn.Resource(k.Resource)
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			if tweak != nil {
				tweak(&opts)
			}
			ul, err := res.List(ctx, opts)
			if err != nil {
				return nil, err
			}
			objs := make([]runtime.Object, 0, len(ul.Items))
			for i := range ul.Items {
				if obj, err := convert(k, &ul.Items[i]); err != nil {
					refused(&ul.Items[i], err)
				} else {
					objs = append(objs, obj)
				}
			}
			list := k.NewList()
			if err := meta.SetList(list, objs); err != nil {
				return nil, err
			}
			lm, err := meta.ListAccessor(list)
			if err != nil {
				return nil, err
			}
			lm.SetResourceVersion(ul.GetResourceVersion())
			lm.SetContinue(ul.GetContinue())
			return list, nil
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			if tweak != nil {
				tweak(&opts)
			}
			w, err := res.Watch(ctx, opts)
			if err != nil {
				return nil, err
			}
			return filter(w, func(e watch.Event) (watch.Event, bool) {
				u, ok := e.Object.(*unstructured.Unstructured)
				if !ok || e.Type == watch.Error {
					return e, true
				}
				obj, err := convert(k, u)
				if err != nil {
					// A refused update leaves the last good version in the
					// cache; a refused add is never seen.
					refused(u, err)
					return e, false
				}
				e.Object = obj
				return e, true
			}), nil
		},
	}
}

// filteredWatch is watch.Filter that also ends when stopped while its
// reader has gone: watch.Filter's goroutine stays blocked on its send for
// good once the reflector stops reading (test/integration's teardown check
// found it).
type filteredWatch struct {
	in   watch.Interface
	out  chan watch.Event
	done chan struct{}
	once sync.Once
}

func filter(in watch.Interface, f func(watch.Event) (watch.Event, bool)) watch.Interface {
	w := &filteredWatch{in: in, out: make(chan watch.Event), done: make(chan struct{})}
	go func() {
		defer close(w.out)
		for e := range in.ResultChan() {
			e, keep := f(e)
			if !keep {
				continue
			}
			select {
			case w.out <- e:
			case <-w.done:
				return
			}
		}
	}()
	return w
}

func (w *filteredWatch) ResultChan() <-chan watch.Event { return w.out }

func (w *filteredWatch) Stop() {
	w.once.Do(func() {
		close(w.done)
		w.in.Stop()
	})
}

func convert(k Kind, u *unstructured.Unstructured) (runtime.Object, error) {
	obj := k.New()
	// Quantities are bounded before the converter parses them: one value
	// such as 1e-9999999 costs resource.ParseQuantity seconds, and this
	// watch's every other event would wait behind it.
	if err := extension.CheckQuantities(u.Object, reflect.TypeOf(obj)); err != nil {
		return nil, fmt.Errorf("%s %s: %w", k.Resource.Resource, name(u), err)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
		return nil, fmt.Errorf("%s %s: %w", k.Resource.Resource, name(u), err)
	}
	return obj, nil
}

func name(u *unstructured.Unstructured) string {
	if ns := u.GetNamespace(); ns != "" {
		return ns + "/" + u.GetName()
	}
	return u.GetName()
}

// Informer is a shared informer for k on ListWatch.
func Informer(dyn dynamic.Interface, k Kind, tweak func(*metav1.ListOptions), refused Refused) cache.SharedIndexInformer {
	return cache.NewSharedIndexInformer(ListWatch(dyn, k, tweak, refused), k.New(), 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
}

// WaitForSync waits for synced until timeout, and says what did not sync
// instead of blocking forever: a caller fails its start or its readiness
// with this error.
func WaitForSync(ctx context.Context, timeout time.Duration, what string, synced ...cache.InformerSynced) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return fmt.Errorf("%s did not sync within %s: is the API server reachable and the CRD installed? (objects that do not decode are skipped and reported, so it is not one bad object)", what, timeout)
	}
	return nil
}
