package core

import (
	"context"
	"net"
)

// dialTCP is the default Config.Dial. A plain net.Dialer: fasthttp's default dialer starts a process-wide
// goroutine that never ends.
func dialTCP(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}
