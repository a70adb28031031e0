package cpusuppress

import (
	"time"

	"github.com/koord-project/koord/pkg/koordlet/nodeslo"
)

// GuardSteps is the interference guard's next number of steps, from its
// current one and the LS pods' run-queue latency over the last interval
// (p99 and how many waits it is made of). Over the target it takes one more
// step (until BE is down to its floor); under half the target it gives one
// back; in between it holds, so that it does not flap at the target. An
// interval with fewer than MinWaits waits holds too: it says nothing. The
// guard off is zero steps.
func GuardSteps(cfg nodeslo.Guard, thresholdPercent, steps int64, p99 time.Duration, waits uint64) int64 {
	if !cfg.Enable || cfg.StepPercent <= 0 {
		return 0
	}
	most := (thresholdPercent + cfg.StepPercent - 1) / cfg.StepPercent
	switch {
	case waits < cfg.MinWaits:
	case p99 > cfg.TargetP99:
		steps++
	case p99 <= cfg.TargetP99/2:
		steps--
	}
	return min(max(steps, 0), most)
}
