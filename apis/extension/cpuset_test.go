package extension

import (
	"strings"
	"testing"
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
