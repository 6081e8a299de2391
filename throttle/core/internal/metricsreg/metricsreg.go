// Package metricsreg registers the throttle module's collectors without ever panicking.
package metricsreg

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Register registers c on reg and reports whether it did. A failure is logged with warnf, never a panic: owner
// names the instance in the message, and hint says how to avoid a duplicate registration (another instance
// already exported the same metrics).
func Register(reg prometheus.Registerer, c prometheus.Collector, owner, hint string, warnf func(format string, v ...any)) bool {
	err := reg.Register(c)
	if err == nil {
		return true
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		warnf("%s: metrics already registered; %s", owner, hint)
	} else {
		warnf("%s: metrics not registered: %v", owner, err)
	}
	return false
}
