package bench

import (
	"fmt"

	"github.com/fiberguard/fiberguard/loadshed"
)

// SignalNames lists the loadshed signals the scenarios can compare, by the name Signal takes: the default
// (CPU and scheduling latency), the CPU signal alone, the host-wide CPU (what loadshed read without a limit
// before), scheduling latency alone and pressure stall information.
var SignalNames = []string{"default", "cpu", "host", "sched", "pressure"}

// Signal returns the loadshed signal of a name in SignalNames; "default" is nil (loadshed's own default).
func Signal(name string) (loadshed.Signal, error) {
	switch name {
	case "", "default":
		return nil, nil
	case "cpu":
		return loadshed.NewCPU(0), nil
	case "host":
		return loadshed.NewHostCPU(), nil
	case "sched":
		return loadshed.NewSchedLatency(0), nil
	case "pressure":
		return loadshed.NewPressure()
	}
	return nil, fmt.Errorf("unknown loadshed signal %q (one of %v)", name, SignalNames)
}
