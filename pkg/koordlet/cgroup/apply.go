package cgroup

import (
	"errors"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
)

// Setting is one knob value a strategy wants on one cgroup.
type Setting struct {
	// Dir is the cgroup, relative to a hierarchy's root (as PodDir gives it).
	Dir  string
	Knob Knob
	// Value is in the knob's units (see Knob); Unlimited for no limit.
	Value int64
	// Owner names who the setting is for, to report its failure against
	// ("pod <uid>", "besteffort"): errors are keyed by it.
	Owner string
}

type settingKey struct {
	dir  string
	knob Knob
}

// Applier writes settings, reading each file before it writes and writing
// only what differs. Between full passes it skips settings whose value it
// already confirmed, so that a steady node costs no file reads.
type Applier struct {
	Layout Layout
	// confirmed is each setting's value (file units) last read or written.
	confirmed map[settingKey]int64
	// unsupported knobs are not tried again: the kernel will not grow them.
	unsupported map[Knob]error
}

// Result is what one Apply did.
type Result struct {
	Writes int
	// Unsupported lists knobs found missing for the first time.
	Unsupported map[Knob]error
	// Errors are failures by Setting.Owner; vanished cgroups are not errors.
	Errors map[string]error
}

// Apply brings every setting's file to its value. With full it re-reads
// every file; otherwise only settings whose value changed since it was last
// confirmed. Settings no longer asked for are forgotten (not undone: a
// strategy that stops asks for the kernel default instead).
//
// Order matters to the kernel, so writes go in an order it accepts: cgroup
// v1 refuses a child's CFS quota above its parent's and any burst above the
// cgroup's quota, so quota decreases run deepest first after burst
// decreases, and quota increases shallowest first before burst increases.
// On v1 a child's quota is also capped at the quota asked of its nearest
// ancestor in the same call.
func (a *Applier) Apply(settings []Setting, full bool) Result {
	if a.confirmed == nil {
		a.confirmed, a.unsupported = map[settingKey]int64{}, map[Knob]error{}
	}
	res := Result{Unsupported: map[Knob]error{}, Errors: map[string]error{}}
	settings = a.clamp(settings)
	wanted := make(map[settingKey]bool, len(settings))
	type pending struct {
		s          Setting
		have, want int64
	}
	var todo []pending
	for _, s := range settings {
		k := settingKey{s.Dir, s.Knob}
		wanted[k] = true
		if _, bad := a.unsupported[s.Knob]; bad {
			continue
		}
		want := a.Layout.fileValue(s.Knob, s.Value)
		if have, ok := a.confirmed[k]; ok && have == want && !full {
			continue
		}
		have, err := a.Layout.readRaw(s.Knob, s.Dir)
		if a.failed(&res, s, err) {
			delete(a.confirmed, k)
			continue
		}
		if have == want {
			a.confirmed[k] = have
			continue
		}
		todo = append(todo, pending{s, have, want})
	}
	for k := range a.confirmed {
		if !wanted[k] {
			delete(a.confirmed, k)
		}
	}
	// Sort into the order the kernel accepts (see above).
	phase := func(p pending) int {
		down := less(p.want, p.have)
		switch {
		case p.s.Knob == CPUBurst && down:
			return 0
		case p.s.Knob == CPUQuota && down:
			return 1
		case p.s.Knob == CPUQuota:
			return 2
		case p.s.Knob == CPUBurst:
			return 3
		}
		return 4
	}
	sort.SliceStable(todo, func(i, j int) bool {
		pi, pj := phase(todo[i]), phase(todo[j])
		if pi != pj {
			return pi < pj
		}
		di, dj := depth(todo[i].s.Dir), depth(todo[j].s.Dir)
		if pi == 1 {
			return di > dj
		}
		return di < dj
	})
	for _, p := range todo {
		k := settingKey{p.s.Dir, p.s.Knob}
		wrote, err := a.Layout.replace(p.s.Knob, p.s.Dir, p.have, p.s.Value)
		if a.failed(&res, p.s, err) {
			delete(a.confirmed, k)
			continue
		}
		if wrote {
			res.Writes++
		}
		a.confirmed[k] = p.want
	}
	return res
}

// failed records err against the setting's owner (a vanished cgroup is not
// a failure: pods come and go) and says whether there was one.
func (a *Applier) failed(res *Result, s Setting, err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, ErrUnsupported):
		a.unsupported[s.Knob] = err
		res.Unsupported[s.Knob] = err
	case errors.Is(err, fs.ErrNotExist):
	default:
		if _, dup := res.Errors[s.Owner]; !dup {
			res.Errors[s.Owner] = err
		}
	}
	return true
}

// Unsupported says whether a knob was found missing on this kernel.
func (a *Applier) Unsupported(k Knob) bool {
	_, bad := a.unsupported[k]
	return bad
}

// clamp caps, on v1, each CFS quota at the (capped) quota asked of its
// nearest ancestor in settings, and each burst at the quota asked of its own
// cgroup.
func (a *Applier) clamp(settings []Setting) []Setting {
	out := make([]Setting, len(settings))
	copy(out, settings)
	order := make([]int, len(out))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return depth(out[order[i]].Dir) < depth(out[order[j]].Dir) })
	quota := map[string]int64{}
	for _, i := range order {
		s := &out[i]
		if s.Knob != CPUQuota {
			continue
		}
		if a.Layout.Version == V1 {
			for dir := filepath.Dir(s.Dir); dir != "." && dir != "/" && dir != ""; dir = filepath.Dir(dir) {
				// An unlimited cgroup inherits its ancestors' limit, so the
				// nearest limited one is what the kernel compares with.
				if q, ok := quota[dir]; ok && q >= 0 {
					if less(q, s.Value) {
						s.Value = q
					}
					break
				}
			}
		}
		quota[s.Dir] = s.Value
	}
	for i := range out {
		if s := &out[i]; s.Knob == CPUBurst {
			if q, ok := quota[s.Dir]; ok && q >= 0 && s.Value > q {
				s.Value = q
			}
		}
	}
	return out
}

// less compares knob values with Unlimited as the largest.
func less(a, b int64) bool {
	switch {
	case a == Unlimited:
		return false
	case b == Unlimited:
		return true
	}
	return a < b
}

func depth(dir string) int { return strings.Count(filepath.Clean(dir), "/") }
