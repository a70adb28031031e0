package controlplane

import (
	"fmt"
	"os"
	"sync"

	"k8s.io/klog/v2"
)

// ProcessTB lets a program (the demo) use the test-oriented kube-apiserver
// starter, which wants a testing.TB: logs go to klog, cleanups run at Close,
// and a fatal error ends the process after cleaning up.
type ProcessTB struct {
	name     string
	mu       sync.Mutex
	cleanups []func()
	failed   bool
}

// NewProcessTB returns a TB for a program run.
func NewProcessTB(name string) *ProcessTB { return &ProcessTB{name: name} }

// Close runs the registered cleanups, last first.
func (p *ProcessTB) Close() {
	p.mu.Lock()
	cleanups := p.cleanups
	p.cleanups = nil
	p.mu.Unlock()
	for i := len(cleanups) - 1; i >= 0; i-- {
		cleanups[i]()
	}
}

func (p *ProcessTB) Attr(key, value string)       {}
func (p *ProcessTB) Chdir(dir string)             { _ = os.Chdir(dir) }
func (p *ProcessTB) Cleanup(f func())             { p.mu.Lock(); p.cleanups = append(p.cleanups, f); p.mu.Unlock() }
func (p *ProcessTB) Error(args ...any)            { p.Log(args...); p.Fail() }
func (p *ProcessTB) Errorf(f string, args ...any) { p.Logf(f, args...); p.Fail() }
func (p *ProcessTB) Fail()                        { p.mu.Lock(); p.failed = true; p.mu.Unlock() }
func (p *ProcessTB) FailNow() {
	p.Fail()
	p.Close()
	os.Exit(1)
}
func (p *ProcessTB) Failed() bool                 { p.mu.Lock(); defer p.mu.Unlock(); return p.failed }
func (p *ProcessTB) Fatal(args ...any)            { p.Log(args...); p.FailNow() }
func (p *ProcessTB) Fatalf(f string, args ...any) { p.Logf(f, args...); p.FailNow() }
func (p *ProcessTB) Helper()                      {}
func (p *ProcessTB) Log(args ...any)              { klog.V(2).InfoDepth(1, fmt.Sprint(args...)) }
func (p *ProcessTB) Logf(f string, args ...any)   { klog.V(2).InfoDepth(1, fmt.Sprintf(f, args...)) }
func (p *ProcessTB) Name() string                 { return p.name }
func (p *ProcessTB) Setenv(key, value string)     { _ = os.Setenv(key, value) }
func (p *ProcessTB) Skip(args ...any)             { p.Fatal(args...) }
func (p *ProcessTB) Skipf(f string, args ...any)  { p.Fatalf(f, args...) }
func (p *ProcessTB) SkipNow()                     { p.FailNow() }
func (p *ProcessTB) Skipped() bool                { return false }
func (p *ProcessTB) TempDir() string {
	dir, err := os.MkdirTemp("", p.name)
	if err != nil {
		p.Fatalf("temp dir: %v", err)
	}
	p.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}
