package controlplane

import (
	"context"
	"fmt"

	"k8s.io/component-base/configz"
	kubeschedulerapp "k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/koord-project/koord/cmd/koord-scheduler/app"
)

// Scheduler is an in-process koord-scheduler.
type Scheduler struct {
	cancel context.CancelFunc
	done   chan error
}

// StartScheduler runs koord-scheduler in this process from a
// KubeSchedulerConfiguration, with the same plugins and args validation as the
// binary. It returns once the scheduler is set up; Stop ends it.
func (cp *ControlPlane) StartScheduler(ctx context.Context, configYAML []byte, extra ...kubeschedulerapp.Option) (*Scheduler, error) {
	path, err := cp.SchedulerConfigFile(configYAML, "", false)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	run, err := app.Setup(ctx, path, extra...)
	if err != nil {
		cancel()
		return nil, err
	}
	s := &Scheduler{cancel: cancel, done: make(chan error, 1)}
	go func() {
		err := run(ctx)
		// Run registers the config on /configz; unregister it so that a
		// scheduler can be started again in this process (restart tests).
		configz.Delete("componentconfig")
		s.done <- err
	}()
	return s, nil
}

// Stop ends the scheduler and waits until it has returned. Stopping twice
// is fine (a test may stop it early and again at cleanup).
func (s *Scheduler) Stop() {
	s.cancel()
	err := <-s.done
	s.done <- err
}

// Err is what the scheduler returned if it has already stopped, else nil.
func (s *Scheduler) Err() error {
	select {
	case err := <-s.done:
		s.done <- err
		return fmt.Errorf("scheduler stopped: %w", err)
	default:
		return nil
	}
}
