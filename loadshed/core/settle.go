package core

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
)

// Settled is a Signal that finds the share of requests to shed, instead of reading it off one measurement. It
// reads a utilisation signal and a latency signal (the default: NewCPU, and the higher of NewSchedLatency and
// NewRunQueue) and keeps a share that it moves at every reading:
//   - by Gain × (utilisation − Target): it grows while the process uses more than Target of its CPU and shrinks
//     while it uses less. A utilisation that stays above Target grows it ever faster (at least 0.01 × Gain,
//     doubling at every reading up to 32 times), so a process that sheds without relief soon sheds everything;
//   - by Kick × (latency − 1) while the latency signal is above 1: goroutines queueing for a CPU mean the process
//     is already behind, so the share jumps at once (but no further than shedding every ordinary request), and
//     it does not come down while they queue, whatever the utilisation: a process starved of CPU by its
//     neighbours, or inside a quota on a busy host, uses less than Target and is still overloaded. A lone
//     queue (none in the reading before) on a process that has been using at least half of its CPU does not
//     jump the share: inside a quota that is the wake-up after the group was throttled, which recurs about once
//     a second at a steady overload, and each jump would shed for a few hundred milliseconds what the
//     utilisation had settled on. The floor below still sheds that reading's arrivals.
//
// While the latency is inside or above the band, what is shed is at least what the band says of the latency
// alone (the snapshot rule of a Max(CPU, SchedLatency)): a queue sheds at once, for as long as it lasts.
//
// A process that queues while it uses little of what it may (below half of it, now and over the last ~10
// readings) is starved: its neighbours, or its group's share of the machine, leave it less CPU than it may use.
// The Settled then remembers its recent utilisation as a ceiling (lowering it by half at most per reading, to the
// lowest level it queued at) and holds the utilisation under Target × ceiling instead of Target, so that it
// admits what the CPU it gets can serve rather than letting the share run down between queues. The ceiling grows
// back by 0.5 % per reading and stops applying once it reaches 0.5 (so one queue on a quiet process, which halves
// it, does not bind): a starvation that ends is forgotten within a few seconds.
//
// Its load is that share (or the latency's floor, if higher) placed on the shedder's bands, so that the
// probability (load − Lower)/(Upper − Lower) is what it sheds: a share of 0.4 reads Lower + 0.4 × (Upper −
// Lower). A share above 1 sheds every ordinary request and moves on through [CriticalLower, CriticalUpper], up to
// 2. A share of 0 reads the utilisation (or the latency, if higher) up to Lower, so that Status shows the
// process's load while it sheds nothing and the sampler can rest.
//
// Why: a load that saturates at 1, read through a band as narrow as 0.90–0.95, makes a probability that jumps
// between 0 and 1 from one reading to the next (a small change of the load is a large change of the
// probability); the admitted stream then comes in bursts, which queue. A share that settles admits a steady
// stream. The Engine gives a Settled its bands and does not smooth its load, which moves gradually already. Each
// Load is one step: the gains are per reading, at the Engine's Interval.
//
// The zero value is not usable: create it with NewSettled.
type Settled struct {
	util, latency Signal
	target        float64
	names         []string

	mu     sync.Mutex
	policy Policy
	share  float64
	run    int // readings in a row with the utilisation above Target
	// avg is the recent utilisation; ceiling the utilisation at which a starved process last queued, 1 when
	// none applies.
	avg, ceiling float64
	queued       bool // the previous reading's latency was above 1
	last         []Reading
}

// The defaults of NewSettled.
const (
	// DefaultSettleTarget is the utilisation a Settled holds the process at.
	DefaultSettleTarget = 0.97
	settleGain          = 0.1  // share per reading per unit of utilisation above or below Target
	settleKick          = 0.5  // share per reading per unit of latency above 1
	settlePersist       = 0.01 // the smallest error of a utilisation above Target, doubled every reading in a row
	settleMaxDoublings  = 5
	settleMaxShare      = 2     // every ordinary request shed and every critical one
	settleAvgWeight     = 0.1   // of each reading in the recent utilisation
	settleStarved       = 0.5   // a process that queues below this utilisation is starved
	settleCeilingCut    = 0.5   // the most one queueing reading lowers the ceiling by
	settleForget        = 1.005 // growth of the ceiling per reading: from 0.25 to 0.5 in about 140 readings
)

// settleDefaultPolicy is the band a Settled uses until an Engine gives it its own: the adapters' defaults.
var settleDefaultPolicy = Policy{Lower: 0.90, Upper: 0.95, CriticalLower: 0.98, CriticalUpper: 1.0}

// NewSettled returns a Settled over a utilisation signal and a latency signal (nil: none). target is the
// utilisation it holds the process at, in (0, 2]; 0 means DefaultSettleTarget. It panics on a nil utilisation
// or a target out of range.
func NewSettled(utilisation, latency Signal, target float64) *Settled {
	if utilisation == nil {
		panic("loadshed: NewSettled utilisation signal is nil")
	}
	if target == 0 {
		target = DefaultSettleTarget
	}
	if !(target > 0) || target > 2 {
		panic(fmt.Sprintf("loadshed: NewSettled target must be in (0, 2], got %v", target))
	}
	s := &Settled{util: utilisation, latency: latency, target: target, policy: settleDefaultPolicy, ceiling: 1}
	s.names, s.last = newReadings(s.Signals())
	return s
}

// DefaultSignal is the Signal of a Config without one: a Settled over CPU utilisation (NewCPU(cpus)) and, as its
// latency, the higher of scheduling latency (NewSchedLatency(0)) and the run queue (NewRunQueue(0)). Utilisation
// tells it when the process uses what it may; latency when its goroutines queue for a CPU they do not get: a
// backlog inside a quota, neighbours taking the CPU, or too small a GOMAXPROCS. The run queue sees that queue as
// soon as it forms, the scheduling latency once its goroutines have waited.
func DefaultSignal(cpus float64) *Settled {
	return NewSettled(NewCPU(cpus), Max(NewSchedLatency(0), NewRunQueue(0)), 0)
}

// Target is the utilisation the Settled holds the process at.
func (s *Settled) Target() float64 { return s.target }

// Share is the share of requests the Settled sheds now: in [0, 1] for ordinary requests, above 1 also critical
// ones.
func (s *Settled) Share() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.share
}

// Signals returns the utilisation signal and, if any, the latency signal.
func (s *Settled) Signals() []Signal {
	if s.latency == nil {
		return []Signal{s.util}
	}
	return []Signal{s.util, s.latency}
}

// Readings returns each signal's last load; a latency signal that combines others (a Max) is listed by its
// parts.
func (s *Settled) Readings() []Reading {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := append([]Reading(nil), s.last...)
	if c, ok := s.latency.(interface{ Readings() []Reading }); ok {
		out = append(out[:1], c.Readings()...)
	}
	return out
}

// String describes the signal, for logs and Status.
func (s *Settled) String() string {
	return fmt.Sprintf("settled at %g of %s", s.target, strings.Join(s.names, ", beside "))
}

// describe says in plain words what the Settled does, for the log line at start; String names it for Status.
func (s *Settled) describe() string {
	out := fmt.Sprintf("sheds the share of requests that keeps this process's CPU use at %s of what it may use (%s)",
		strconv.FormatFloat(s.target*100, 'g', 4, 64)+"%", s.names[0])
	if len(s.names) > 1 {
		out += fmt.Sprintf(", and more at once while its goroutines wait for a CPU (%s)", s.names[1])
	}
	return out
}

// bind gives the Settled the Engine's bands.
func (s *Settled) bind(p Policy) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.policy = p
}

// Load reads both signals, moves the share and returns it as a load on the bands. It fails only when every
// signal does; a failed signal is left out of that step.
func (s *Settled) Load() (float64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	util, utilErr := readInto(&s.last[0], s.util)
	lat, latOK := 0.0, false
	if s.latency != nil {
		var latErr error
		lat, latErr = readInto(&s.last[1], s.latency)
		if latOK = latErr == nil; !latOK && utilErr != nil {
			return 0, errors.Join(utilErr, latErr)
		}
	}
	if utilErr != nil && !latOK {
		return 0, utilErr
	}
	queueing := latOK && lat > 1
	reading, step := 0.0, 0.0
	if utilErr == nil {
		s.learnCeiling(util, queueing)
		step, reading = settleGain*s.utilError(util), util
	} else { // without a utilisation, the latency stands in for it
		step = settleGain * s.utilError(lat)
	}
	if step > 0 || !queueing { // while goroutines queue, the share does not come down
		s.share += step
	}
	if latOK {
		if queueing && s.share < 1 && s.kicks(util, utilErr == nil) {
			s.share = min(s.share+settleKick*(lat-1), 1)
		}
		reading = max(reading, lat)
	}
	s.queued = queueing
	s.share = min(max(s.share, 0), settleMaxShare)
	shed := s.share
	if latOK { // a queue sheds at once at least what the latency alone, read through the band, would
		shed = max(shed, Probability(lat, s.policy.Lower, s.policy.Upper))
	}
	return s.loadOf(shed, reading), nil
}

// kicks reports whether a queue read now moves the share: one that follows another, or one on a process that
// uses less than half of its CPU (settleStarved), now or over its recent readings: starved, or at the onset of an
// overload. A lone queue on a process that has been using at least half of what it may is the wake-up after a
// stall it could not shorten (a quota's throttling, a neighbour's slice): the floor sheds that reading's
// arrivals, and the share, which the utilisation has settled, stays where it is.
func (s *Settled) kicks(util float64, haveUtil bool) bool {
	return s.queued || !haveUtil || util < settleStarved || s.avg < settleStarved
}

// learnCeiling keeps the utilisation at which a starved process queues: a process that queues while it uses
// less than settleStarved of what it may gets no more than that now, whatever it may use, so it holds its
// utilisation under the lowest such level, and forgets it gradually.
func (s *Settled) learnCeiling(util float64, queueing bool) {
	s.avg += settleAvgWeight * (util - s.avg)
	s.ceiling = min(s.ceiling*settleForget, 1)
	if queueing && util < settleStarved && s.avg < settleStarved {
		// By half at most: a lone burst on a quiet process does not make a ceiling that binds (below 0.5).
		s.ceiling = min(s.ceiling, max(s.avg, s.ceiling*settleCeilingCut))
	}
}

// utilError is the step's error: the utilisation less Target, raised while it stays above Target.
func (s *Settled) utilError(util float64) float64 {
	target := s.target
	if s.ceiling < settleStarved {
		target *= s.ceiling
	}
	e := util - target
	if !(e > 0) {
		s.run = 0
		return e
	}
	s.run++
	return max(e, settlePersist*math.Exp2(float64(min(s.run-1, settleMaxDoublings))))
}

// loadOf places a share on the bands: the reading up to Lower at 0, then [Lower, Upper] for ordinary requests,
// then [CriticalLower, CriticalUpper].
func (s *Settled) loadOf(share, reading float64) float64 {
	p := s.policy
	switch {
	case share <= 0:
		return min(reading, p.Lower)
	case share <= 1:
		return p.Lower + share*(p.Upper-p.Lower)
	default:
		return p.CriticalLower + (share-1)*(p.CriticalUpper-p.CriticalLower)
	}
}

// bindSettled gives the bands to sig if it is a Settled, or to each Settled it combines, and reports whether sig
// itself is one.
func bindSettled(sig Signal, p Policy) bool {
	switch s := sig.(type) {
	case *Settled:
		s.bind(p)
		return true
	case *Combined:
		for _, inner := range s.signals {
			bindSettled(inner, p)
		}
	}
	return false
}
