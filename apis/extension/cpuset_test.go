package extension

import (
	"strings"
	"testing"

	"k8s.io/utils/cpuset"
)

func TestParseCPUSet(t *testing.T) {
	for in, want := range map[string]string{"": "", "0-3,8": "0-3,8", " 1 \n": "1", "16383": "16383"} {
		got, err := ParseCPUSet(in)
		if err != nil || got.String() != want {
			t.Errorf("ParseCPUSet(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"0-50000000": "CPU 50000000 is out of range [0, 16383]",
		"x":          `"x" is not a CPU number`,
		"3-1":        "invalid",
		"-1":         "not a CPU number",
	} {
		if _, err := ParseCPUSet(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseCPUSet(%q): %v, want an error with %q", in, err, want)
		}
	}
}

// Found by FuzzNUMAInfo: a huge range in a pod annotation or a ConfigMap
// used to make the parsers build a set of tens of millions of CPUs. Now it is
// an error naming the key.
func TestHugeCPURangeRejected(t *testing.T) {
	_, err := GetResourceStatus(map[string]string{AnnotationResourceStatus: `{"cpuset":"0-50000000"}`})
	if err == nil || !strings.Contains(err.Error(), "annotation "+AnnotationResourceStatus) || !strings.Contains(err.Error(), "out of range") {
		t.Errorf("resource-status with a huge range: %v", err)
	}
}

// The forged annotation of the trust-boundaries review: "0-16383" repeated
// to 200 KB took seconds per parse. Past MaxCPUSetLength it is refused; up to
// it, overlapping ranges are merged, not unioned one by one.
func TestHostileCPUSets(t *testing.T) {
	long := strings.Repeat("0-16383,", 25000) + "0"
	if _, err := ParseCPUSet(long); err == nil || !strings.Contains(err.Error(), "more than the") {
		t.Errorf("a %d-byte cpuset: %v, want it refused for its length", len(long), err)
	}
	_, err := GetResourceStatus(map[string]string{AnnotationResourceStatus: `{"cpuset":"` + long + `"}`})
	if err == nil || !strings.Contains(err.Error(), AnnotationResourceStatus) {
		t.Errorf("resource-status with a %d-byte cpuset: %v, want an error naming the key", len(long), err)
	}
	repeated := strings.TrimSuffix(strings.Repeat("0-16383,", MaxCPUSetLength/8), ",")
	got, err := ParseCPUSet(repeated)
	if err != nil || got.Size() != MaxCPUID+1 {
		t.Errorf("%d repetitions of 0-16383: %d CPUs, %v", MaxCPUSetLength/8, got.Size(), err)
	}
	for in, want := range map[string]string{"5,1-3,2-6": "1-6", "8,0,4": "0,4,8", "3-3": "3", "0-1,0-1": "0-1"} {
		if got, err := ParseCPUSet(in); err != nil || got.String() != want {
			t.Errorf("ParseCPUSet(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
}

// FuzzParseCPUSet holds ParseCPUSet to k8s.io/utils/cpuset.Parse on every
// input both accept: the merging must not change what a cpuset means.
func FuzzParseCPUSet(f *testing.F) {
	for _, s := range []string{"0-3,8", "5,1-3,2-6", "", "1-", "3-1", "0-16383", "1,,2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseCPUSet(s)
		if err != nil {
			return
		}
		want, err := cpuset.Parse(strings.TrimSpace(s))
		if err != nil {
			// Parse is stricter about spaces around numbers; ours trims them.
			return
		}
		if !got.Equals(want) {
			t.Errorf("ParseCPUSet(%q) = %s, cpuset.Parse = %s", s, got, want)
		}
	})
}

// BenchmarkParseCPUSetHostile is the cost of the forged 200 KB cpuset of
// the trust-boundaries review (refused by its length) and of the largest
// cpuset text ParseCPUSet accepts, every range the whole id space.
func BenchmarkParseCPUSetHostile(b *testing.B) {
	for name, tc := range map[string]struct {
		in      string
		refused bool
	}{
		"refused-200KB":    {strings.Repeat("0-16383,", 25000) + "0", true},
		"largest-accepted": {strings.TrimSuffix(strings.Repeat("0-16383,", MaxCPUSetLength/8), ","), false},
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ParseCPUSet(tc.in); (err != nil) != tc.refused {
					b.Fatal(err)
				}
			}
		})
	}
}
