package bench

import (
	"fmt"

	"github.com/fiberguard/fiberguard/loadshed"
)

// SignalNames lists the loadshed signals the scenarios can compare, by the name Signal takes.
var SignalNames = []string{"default", "cpu"}

// Signal returns the loadshed signal of a name in SignalNames; "default" is nil (loadshed's own default).
func Signal(name string) (loadshed.Signal, error) {
	switch name {
	case "", "default":
		return nil, nil
	case "cpu":
		return loadshed.NewCPU(0), nil
	}
	return nil, fmt.Errorf("unknown loadshed signal %q (one of %v)", name, SignalNames)
}
