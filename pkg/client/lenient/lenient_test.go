package lenient

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/koord-project/koord/apis/extension"
	schedulingv1alpha1 "github.com/koord-project/koord/apis/scheduling/v1alpha1"
	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
)

func reservation(name, ttl string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "scheduling.koordinator.sh/v1alpha1", "kind": "Reservation",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"ttl": ttl, "owners": []any{map[string]any{"object": map[string]any{"name": "x"}}}},
	}}
}

// One object that does not decode is skipped and reported; the others are
// listed and watched as typed objects.
func TestListWatchSkipsWhatDoesNotDecode(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme,
		map[schema.GroupVersionResource]string{Reservations.Resource: "ReservationList"},
		reservation("good", "1h"), reservation("banana", "banana"))
	var refused []string
	lw := ListWatch(client, Reservations, nil, func(u *unstructured.Unstructured, err error) {
		refused = append(refused, u.GetName()+": "+err.Error())
	})
	obj, err := lw.ListWithContext(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("one bad object failed the list: %v", err)
	}
	list := obj.(*schedulingv1alpha1.ReservationList)
	if len(list.Items) != 1 || list.Items[0].Name != "good" || list.Items[0].Spec.TTL.Duration.Hours() != 1 {
		t.Errorf("listed %+v, want only good with its 1h ttl", list.Items)
	}
	if len(refused) != 1 {
		t.Fatalf("refused %v, want banana reported once", refused)
	}

	w, err := lw.WatchWithContext(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	res := client.Resource(Reservations.Resource)
	if _, err := res.Create(ctx, reservation("worse", "soon"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := res.Create(ctx, reservation("fine", "5m"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The fake replays what exists, then the creations: every event is a
	// typed object, and worse never comes.
	var seen []string
	for name := ""; name != "fine"; {
		e := <-w.ResultChan()
		r, ok := e.Object.(*schedulingv1alpha1.Reservation)
		if !ok || e.Type != watch.Added {
			t.Fatalf("watch event %v %T, want typed Reservations added", e.Type, e.Object)
		}
		name = r.Name
		seen = append(seen, name)
	}
	if slices.Contains(seen, "worse") || slices.Contains(seen, "banana") {
		t.Errorf("watched %v: objects that do not decode came through", seen)
	}
	if !slices.ContainsFunc(refused, func(s string) bool {
		return strings.HasPrefix(s, "worse: ") && strings.Contains(s, `invalid duration "soon"`)
	}) {
		t.Errorf("refused %v, want worse reported with its field's error", refused)
	}
}

// Stopping the watch while nobody reads ends its goroutine.
func TestWatchStopsWithoutReader(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{Reservations.Resource: "ReservationList"}, reservation("good", "1h"))
	w, err := ListWatch(client, Reservations, nil, func(*unstructured.Unstructured, error) {}).WatchWithContext(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The fake replays good; nobody reads it, and the reader stops.
	time.Sleep(50 * time.Millisecond)
	w.Stop()
}

// A NodeMetric whose usage is a quantity bomb is refused before the
// converter parses it, naming the field; the others are listed.
func TestQuantityBombRefused(t *testing.T) {
	metric := func(name, cpu string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeMetric", "metadata": map[string]any{"name": name},
			"status": map[string]any{"nodeMetric": map[string]any{"nodeUsage": map[string]any{"resources": map[string]any{"cpu": cpu}}}},
		}}
	}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{NodeMetrics.Resource: "NodeMetricList"}, metric("n1", "1500m"), metric("n2", "1e-99999999"))
	var refused []string
	obj, err := ListWatch(client, NodeMetrics, nil, func(u *unstructured.Unstructured, err error) {
		refused = append(refused, err.Error())
	}).ListWithContext(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(obj.(*slov1alpha1.NodeMetricList).Items); n != 1 {
		t.Errorf("listed %d NodeMetrics, want n1 alone", n)
	}
	want := `nodemetrics n2: status.nodeMetric.nodeUsage.resources.cpu: quantity "1e-99999999" has an exponent of 8 digits`
	if len(refused) != 1 || !strings.HasPrefix(refused[0], want) {
		t.Errorf("refused %q, want %q", refused, want)
	}
}

// Whatever quantities and however many of them a stored NodeMetric holds,
// converting it never panics, and is refused, naming the field, exactly
// when a quantity is out of bounds.
func FuzzConvertQuantities(f *testing.F) {
	for _, s := range []string{"1500m", "2Gi", "1e-9999999", "1e-99", "9.99e+99", strings.Repeat("9", 31), "", "x"} {
		f.Add(s, uint8(3))
	}
	f.Fuzz(func(t *testing.T, q string, n uint8) {
		var pods []any
		for i := range int(n) {
			pods = append(pods, map[string]any{"namespace": "x", "name": string(rune('a' + i%26)), "podUsage": map[string]any{"resources": map[string]any{"cpu": q}}})
		}
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeMetric",
			"metadata": map[string]any{"name": "n1"}, "status": map[string]any{"podsMetric": pods}}}
		_, err := convert(NodeMetrics, u)
		bounded := extension.CheckQuantity(q) == nil
		switch {
		case n > 0 && !bounded && (err == nil || !strings.Contains(err.Error(), "status.podsMetric[")):
			t.Fatalf("%q accepted or refused without naming the field: %v", q, err)
		case err != nil && bounded && strings.Contains(err.Error(), "exponent"):
			t.Fatalf("%q is within bounds but refused as a bomb: %v", q, err)
		}
	})
}
