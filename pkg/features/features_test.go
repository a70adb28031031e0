package features

import (
	"flag"
	"io"
	"strings"
	"testing"
)

func TestFlag(t *testing.T) {
	g := New()
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	Flag(fs, g)
	if !g.Enabled(BatchResource) || !g.Enabled(RunqueueLatency) {
		t.Fatal("beta gates must default on")
	}
	if err := fs.Parse([]string{"--feature-gates=BatchResource=false,RunqueueLatency=true"}); err != nil {
		t.Fatal(err)
	}
	if g.Enabled(BatchResource) {
		t.Error("BatchResource=false was not applied")
	}
	err := New().Set("NoSuchGate=true")
	if err == nil || !strings.Contains(err.Error(), "NoSuchGate") {
		t.Errorf("an unknown gate must be rejected naming it, got %v", err)
	}
}
