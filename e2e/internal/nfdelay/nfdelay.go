//go:build linux

// Package nfdelay holds packets queued by an iptables NFQUEUE rule for a fixed time before accepting them: a
// delay line that emulates network round-trip time on loopback, where the kernel's netem qdisc is not
// available.
//
// With rules queueing both directions of a port (`-o lo --dport P` and `--sport P` in OUTPUT, which on loopback
// sees every packet once), holding each packet RTT/2 makes the TCP connect time RTT. Add `--queue-bypass` to the
// rules so that packets pass undelayed while no Line reads the queue instead of vanishing. Needs root
// (CAP_NET_ADMIN) in the network namespace of the rules.
//
// For timing within a few milliseconds on a loaded machine, run the Lines in a process of their own, away from
// the traffic they delay, at a high nice level (nice -n -20), with spare Ps (GOMAXPROCS above the CPU count) and
// the garbage collector off; Stats reports how late packets were released.
package nfdelay

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	nfqueue "github.com/florianl/go-nfqueue/v2"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// queued is one held packet and the monotonic instant it is due.
type queued struct {
	id  uint32
	due time.Duration // since Line.base
}

// Line delays every packet of one NFQUEUE queue by the same duration, so the order is kept (FIFO). Create it
// with Start; Close stops it.
type Line struct {
	delay time.Duration
	nf    *nfqueue.Nfqueue
	base  time.Time
	fifo  chan queued

	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once

	held, overflow, verdictErrs atomic.Uint64
	late                        atomic.Uint64
	maxLate                     atomic.Int64 // ns
}

// Stats counts a Line's packets.
type Stats struct {
	// Held is the number of packets delayed.
	Held uint64
	// Overflow is the number of packets accepted undelayed because the line was full.
	Overflow uint64
	// VerdictErrors is the number of verdicts the kernel refused.
	VerdictErrors uint64
	// Late is the number of packets released more than 2 ms after they were due.
	Late uint64
	// MaxLate is the latest a packet was released after it was due.
	MaxLate time.Duration
}

// maxHeld bounds the packets in the line (and the kernel queue).
const maxHeld = 65536

// Start binds NFQUEUE queue num in the caller's network namespace and delays each of its packets by delay.
func Start(num uint16, delay time.Duration) (*Line, error) {
	if delay <= 0 {
		return nil, errors.New("nfdelay: delay must be positive")
	}
	nf, err := nfqueue.Open(&nfqueue.Config{
		NfQueue:      num,
		MaxQueueLen:  maxHeld,
		MaxPacketLen: 0,
		Copymode:     nfqueue.NfQnlCopyMeta, // the verdict needs only the packet id
		Flags:        nfqueue.NfQaCfgFlagGSO,
		AfFamily:     unix.AF_INET,
	})
	if err != nil {
		return nil, err
	}
	// Keep reading when the socket buffer overruns instead of failing, and make overruns unlikely.
	if err := nf.SetOption(netlink.NoENOBUFS, true); err != nil {
		_ = nf.Close()
		return nil, err
	}
	if err := nf.Con.SetReadBuffer(8 << 20); err != nil {
		_ = nf.Close()
		return nil, err
	}

	ctx, cancel := context.WithCancel(context.Background())
	l := &Line{
		delay:  delay,
		nf:     nf,
		base:   time.Now(),
		fifo:   make(chan queued, maxHeld),
		cancel: cancel,
		done:   make(chan struct{}),
	}
	hook := func(a nfqueue.Attribute) int {
		if a.PacketID == nil {
			return 0
		}
		select {
		case l.fifo <- queued{id: *a.PacketID, due: time.Since(l.base) + l.delay}:
			l.held.Add(1)
		default:
			l.overflow.Add(1)
			l.verdict(*a.PacketID)
		}
		return 0
	}
	onErr := func(error) int {
		if ctx.Err() != nil {
			return 1
		}
		return 0 // a transient read error; keep going
	}
	if err := nf.RegisterWithErrorFunc(ctx, hook, onErr); err != nil {
		cancel()
		_ = nf.Close()
		return nil, err
	}
	go l.release(ctx)
	return l, nil
}

func (l *Line) verdict(id uint32) {
	if err := l.nf.SetVerdict(id, nfqueue.NfAccept); err != nil {
		l.verdictErrs.Add(1)
	}
}

// release accepts each packet when it is due. It sleeps with nanosleep on a locked thread with 1 ns timer
// slack: Go timers wake 0.1-4 ms late under load. Only one goroutine stamps (the library's reader) and one
// releases, so only the maximum lateness, not reordering, comes from a loaded machine.
func (l *Line) release(ctx context.Context) {
	defer close(l.done)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// The kernel may otherwise let a sleep run up to 50 µs long to batch wake-ups (best effort). A real-time
	// class would wake it sooner, but SCHED_FIFO threads in a Go process stalled it for whole RT-throttling
	// periods (~1 s); run the process at a high nice level instead.
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	for {
		var q queued
		select {
		case <-ctx.Done():
			return
		case q = <-l.fifo:
		}
		for {
			wait := q.due - time.Since(l.base)
			if wait <= 0 || ctx.Err() != nil {
				break
			}
			ts := unix.NsecToTimespec(int64(wait))
			_ = unix.Nanosleep(&ts, nil) // EINTR: loop and sleep the rest
		}
		late := time.Since(l.base) - q.due
		if late > 2*time.Millisecond {
			l.late.Add(1)
		}
		if int64(late) > l.maxLate.Load() {
			l.maxLate.Store(int64(late))
		}
		l.verdict(q.id)
	}
}

// Stats returns the Line's counters.
func (l *Line) Stats() Stats {
	return Stats{
		Held:          l.held.Load(),
		Overflow:      l.overflow.Load(),
		VerdictErrors: l.verdictErrs.Load(),
		Late:          l.late.Load(),
		MaxLate:       time.Duration(l.maxLate.Load()),
	}
}

// Close stops the Line and waits for its goroutines. Packets still held are dropped with the queue binding;
// TCP retransmits them, and with --queue-bypass later packets pass undelayed.
func (l *Line) Close() error {
	var err error
	l.once.Do(func() {
		l.cancel()
		<-l.done
		err = l.nf.Close()
	})
	return err
}
