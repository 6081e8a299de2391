package core

import (
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// handshakeRTT returns the round trip of conn's TCP handshake as the kernel timed it (TCP_INFO), or false when
// the kernel has no sample (a retransmitted SYN gives none). The kernel takes the time when the SYN-ACK arrives,
// so the busy-process scheduling delay that a wall clock around connect adds is left out.
func handshakeRTT(conn net.Conn) (time.Duration, bool) {
	tc, ok := conn.(*net.TCPConn)
	if !ok {
		return 0, false
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return 0, false
	}
	var (
		info *unix.TCPInfo
		serr error
	)
	if err := raw.Control(func(fd uintptr) {
		info, serr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	}); err != nil || serr != nil || info.Rtt == 0 {
		return 0, false
	}
	return time.Duration(info.Rtt) * time.Microsecond, true
}
