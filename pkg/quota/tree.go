// Package quota is the elastic-quota tree: which ElasticQuota a pod is
// charged to, what each quota's pods use and ask, and each quota's runtime
// (what it may use now: its min, plus a share of what the others leave
// idle by its shared weight, never past its max). The ElasticQuota
// scheduler plugin checks pods against it; koord-manager writes it to the
// quotas' status.
package quota

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/koord-project/koord/apis/extension"
	schedulingsigsv1alpha1 "github.com/koord-project/koord/apis/schedulingsigs/v1alpha1"
)

// Vec is an amount per resource, in milli-units (cpu in millicores,
// memory in milli-bytes) so that every resource is an int64 of one scale.
type Vec map[corev1.ResourceName]int64

// unbounded stands for "no limit" and for quantities too large to hold in
// milli-units: sums of a few of them still fit in an int64.
const unbounded = math.MaxInt64 / 16

// VecOf converts a ResourceList.
func VecOf(l corev1.ResourceList) Vec {
	v := make(Vec, len(l))
	for name, q := range l {
		v[name] = milli(q)
	}
	return v
}

func milli(q resource.Quantity) int64 {
	if q.CmpInt64(unbounded/1000) > 0 {
		return unbounded
	}
	return q.MilliValue()
}

// List converts back to a ResourceList (cpu as a decimal, the rest in
// whole units where they are whole).
func (v Vec) List() corev1.ResourceList {
	out := make(corev1.ResourceList, len(v))
	for name, m := range v {
		if m%1000 == 0 {
			out[name] = *resource.NewQuantity(m/1000, format(name))
		} else {
			out[name] = *resource.NewMilliQuantity(m, format(name))
		}
	}
	return out
}

func format(name corev1.ResourceName) resource.Format {
	if name == corev1.ResourceCPU {
		return resource.DecimalSI
	}
	return resource.BinarySI
}

// Add adds o to v.
func (v Vec) Add(o Vec) { v.addScaled(o, 1) }

// Sub subtracts o from v.
func (v Vec) Sub(o Vec) { v.addScaled(o, -1) }

func (v Vec) addScaled(o Vec, k int64) {
	for name, m := range o {
		v[name] += k * m
	}
}

// Equal says whether v and o hold the same amounts (a missing resource is
// zero).
func (v Vec) Equal(o Vec) bool {
	for name, m := range v {
		if o[name] != m {
			return false
		}
	}
	for name, m := range o {
		if v[name] != m {
			return false
		}
	}
	return true
}

// Clone copies v.
func (v Vec) Clone() Vec {
	out := make(Vec, len(v))
	for name, m := range v {
		out[name] = m
	}
	return out
}

// Show writes an amount the way a ResourceList shows it ("1500m", "2Gi").
func Show(name corev1.ResourceName, m int64) string {
	if m >= unbounded {
		return "unbounded"
	}
	q := Vec{name: m}.List()[name]
	return q.String()
}

// Quota is one ElasticQuota as the tree reads it.
type Quota struct {
	Name, Namespace string
	// Created and UID order quotas that share a name: the older one keeps it.
	Created time.Time
	UID     types.UID
	extension.QuotaSpec
	Min, Max Vec
	// Weight is the shared weight (its max when not given).
	Weight Vec
	// Err is why the quota cannot be used (a key that does not parse, a
	// missing parent, a cycle): its pods stay pending with it.
	Err error
}

// QuotaOf reads an ElasticQuota.
func QuotaOf(eq *schedulingsigsv1alpha1.ElasticQuota) *Quota {
	q := &Quota{Name: eq.Name, Namespace: eq.Namespace, Created: eq.CreationTimestamp.Time, UID: eq.UID, Min: VecOf(eq.Spec.Min), Max: VecOf(eq.Spec.Max)}
	q.QuotaSpec, q.Err = extension.GetQuotaSpec(eq.Labels, eq.Annotations)
	if q.Err != nil {
		q.Err = fmt.Errorf("ElasticQuota %s/%s: %w", eq.Namespace, eq.Name, q.Err)
	}
	q.Weight = VecOf(q.SharedWeight)
	if len(q.Weight) == 0 {
		q.Weight = q.Max.Clone()
	}
	for name, m := range q.Min {
		if mx, ok := q.Max[name]; ok && m > mx && q.Err == nil {
			q.Err = fmt.Errorf("ElasticQuota %s/%s: min %s %s is more than max %s", eq.Namespace, eq.Name, name, Show(name, m), Show(name, mx))
		}
	}
	return q
}

// max is the quota's max of one resource (unbounded when not given).
func (q *Quota) max(name corev1.ResourceName) int64 {
	if m, ok := q.Max[name]; ok {
		return m
	}
	return unbounded
}

// Tree is a set of quotas with their runtimes computed.
type Tree struct {
	quotas   map[string]*Quota
	children map[string][]string // "" is the root
}

// Shares are a tree's figures at one moment, per quota.
type Shares struct {
	// Runtime is what the quota may use now; Request what its pods (its
	// children's, for a parent) ask, capped by its max.
	Runtime map[string]Vec
	Request map[string]Vec
	// Used is what the quota's pods (its children's, for a parent) hold.
	Used map[string]Vec
}

// NewTree links the quotas by their parent labels. A quota whose name is
// taken by an older one in another namespace, whose parent does not exist
// or is not marked is-parent, or that sits in a cycle gets an Err.
func NewTree(list []*Quota) *Tree {
	t := &Tree{quotas: map[string]*Quota{}, children: map[string][]string{}}
	// Koordinator's quota names are cluster-wide: of two quotas of one name
	// the older keeps it, by creation time then UID (a rule that does not
	// depend on event order, nor lets a quota created later in a namespace
	// that sorts first take an existing one's name).
	sort.SliceStable(list, func(i, j int) bool {
		a, b := list[i], list[j]
		if !a.Created.Equal(b.Created) {
			return a.Created.Before(b.Created)
		}
		if a.UID != b.UID {
			return a.UID < b.UID
		}
		return a.Namespace < b.Namespace
	})
	for _, q := range list {
		if old, ok := t.quotas[q.Name]; ok {
			if q.Err == nil {
				q.Err = fmt.Errorf("ElasticQuota %s/%s: the name %s is taken by the older %s/%s (quota names are cluster-wide)", q.Namespace, q.Name, q.Name, old.Namespace, old.Name)
			}
			continue
		}
		t.quotas[q.Name] = q
	}
	for _, q := range t.quotas {
		if q.Err != nil || q.Parent == "" {
			continue
		}
		p, ok := t.quotas[q.Parent]
		switch {
		case !ok:
			q.Err = fmt.Errorf("ElasticQuota %s/%s: its parent %s (label %s) does not exist", q.Namespace, q.Name, q.Parent, extension.LabelQuotaParent)
		case !p.IsParent:
			q.Err = fmt.Errorf("ElasticQuota %s/%s: its parent %s is not labelled %s=true", q.Namespace, q.Name, q.Parent, extension.LabelQuotaIsParent)
		}
	}
	// A quota is usable when every ancestor is: walk up, and mark cycles.
	for _, q := range t.quotas {
		seen := map[string]bool{}
		for a := q; a.Parent != "" && q.Err == nil; {
			if seen[a.Name] {
				q.Err = fmt.Errorf("ElasticQuota %s/%s: its parents form a cycle through %s", q.Namespace, q.Name, a.Name)
				break
			}
			seen[a.Name] = true
			a = t.quotas[a.Parent]
			if a == nil {
				break
			}
			if a.Err != nil {
				q.Err = fmt.Errorf("ElasticQuota %s/%s: its ancestor %s cannot be used: %w", q.Namespace, q.Name, a.Name, a.Err)
			}
		}
	}
	for name, q := range t.quotas {
		if q.Err == nil {
			t.children[q.Parent] = append(t.children[q.Parent], name)
		}
	}
	for _, kids := range t.children {
		slices.Sort(kids)
	}
	return t
}

// Get is a quota by name (nil if none).
func (t *Tree) Get(name string) *Quota { return t.quotas[name] }

// Empty says whether the tree has no quota at all.
func (t *Tree) Empty() bool { return len(t.quotas) == 0 }

// Quotas are all the quotas, usable or not.
func (t *Tree) Quotas() []*Quota {
	out := make([]*Quota, 0, len(t.quotas))
	for _, q := range t.quotas {
		out = append(out, q)
	}
	return out
}

// Ancestors are a quota's parent, its parent's, ... up to the top.
func (t *Tree) Ancestors(name string) []*Quota {
	var out []*Quota
	for q := t.quotas[name]; q != nil && q.Parent != ""; {
		q = t.quotas[q.Parent]
		if q == nil {
			break
		}
		out = append(out, q)
	}
	return out
}

// Compute works out the Shares from what the pods of each leaf
// quota use and ask (used is within request: a placed pod asks what it
// holds) and the capacity the tree shares (the cluster's, less what pods
// outside any quota hold).
func (t *Tree) Compute(used, request map[string]Vec, total Vec) *Shares {
	s := &Shares{Runtime: map[string]Vec{}, Request: map[string]Vec{}, Used: map[string]Vec{}}
	names := map[corev1.ResourceName]bool{}
	for _, q := range t.quotas {
		for name := range q.Max {
			names[name] = true
		}
		for name := range q.Min {
			names[name] = true
		}
	}
	var sum func(string) // requests and usage, bottom up
	sum = func(name string) {
		q := t.quotas[name]
		req, use := Vec{}, Vec{}
		if kids := t.children[name]; len(kids) > 0 || q.IsParent {
			for _, k := range kids {
				sum(k)
				req.Add(s.Request[k])
				use.Add(s.Used[k])
			}
		} else {
			req.Add(request[name])
			use.Add(used[name])
		}
		for r := range names {
			req[r] = min(req[r], q.max(r))
		}
		s.Request[name], s.Used[name] = req, use
	}
	for _, k := range t.children[""] {
		sum(k)
	}
	var share func(parent string, capacity Vec)
	share = func(parent string, capacity Vec) {
		kids := t.children[parent]
		for _, k := range kids {
			s.Runtime[k] = Vec{}
		}
		for r := range names {
			amounts := t.distribute(s, capacity[r], r, kids)
			for i, k := range kids {
				s.Runtime[k][r] = amounts[i]
			}
		}
		for _, k := range kids {
			share(k, s.Runtime[k])
		}
	}
	share("", total)
	return s
}

// distribute divides capacity of one resource among sibling quotas: first
// each one's guaranteed part (its min, or only the part of its min its
// pods ask when it lends), scaled down if the mins pass the capacity; then
// what is left, by shared weight, to the quotas that ask more, each
// capped at what it asks (so nothing idle is handed to a quota that would
// not use it), water-filling until the rest is given or nobody asks.
func (t *Tree) distribute(s *Shares, capacity int64, r corev1.ResourceName, kids []string) []int64 {
	out := make([]int64, len(kids))
	want := make([]int64, len(kids))
	var guaranteed int64
	for i, k := range kids {
		q := t.quotas[k]
		g := q.Min[r]
		if q.AllowLent {
			g = min(g, s.Request[k][r])
		}
		out[i] = g
		guaranteed += g
	}
	if capacity < 0 {
		capacity = 0
	}
	if guaranteed > capacity {
		for i := range out {
			out[i] = int64(float64(out[i]) * float64(capacity) / float64(guaranteed))
		}
		return out
	}
	left := capacity - guaranteed
	active := 0
	for i, k := range kids {
		want[i] = max(0, s.Request[k][r]-out[i])
		if want[i] > 0 && t.quotas[k].Weight[r] > 0 {
			active++
		}
	}
	for left > 0 && active > 0 {
		var weights float64
		for i, k := range kids {
			if want[i] > 0 {
				weights += float64(t.quotas[k].Weight[r])
			}
		}
		// A quota without a weight for r takes no share of it.
		if weights == 0 {
			break
		}
		given := int64(0)
		saturated := false
		// Quotas whose share covers what they want take it and leave the
		// round; the others wait for the next round's larger shares.
		for i, k := range kids {
			if want[i] == 0 || t.quotas[k].Weight[r] == 0 {
				continue
			}
			part := int64(float64(left) * float64(t.quotas[k].Weight[r]) / weights)
			if part >= want[i] {
				out[i] += want[i]
				given += want[i]
				want[i] = 0
				active--
				saturated = true
			}
		}
		if !saturated {
			for i, k := range kids {
				if want[i] > 0 {
					part := int64(float64(left) * float64(t.quotas[k].Weight[r]) / weights)
					out[i] += part
					given += part
				}
			}
			break
		}
		left -= given
	}
	for i, k := range kids {
		out[i] = min(out[i], t.quotas[k].max(r))
	}
	return out
}
