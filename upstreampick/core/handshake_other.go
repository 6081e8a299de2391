//go:build !linux

package core

import (
	"net"
	"time"
)

// handshakeRTT has no kernel timing outside Linux: the wall-clock connect time is used.
func handshakeRTT(net.Conn) (time.Duration, bool) { return 0, false }
