package scenario

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// Outcome summarises an open-loop attack.
type Outcome struct {
	Offered  float64 // requests per second sent
	Goodput  float64 // 200s per second that finished while the load was offered (not the backlog after it)
	Total    int
	OK       int // 200
	Shed     int // 503
	Timeouts int // no answer within the attack's timeout
	Errors   int // anything else: other statuses, refused or reset connections
	P50, P99 time.Duration
	// FirstShed is how long after the start of the part the first 503 of a request sent in it came back; 0:
	// none did.
	FirstShed time.Duration
	// LastShed is how long after the start of the part the last 503 of a request sent in it came back; 0: none
	// did.
	LastShed time.Duration
}

// ShedFrac is the share of requests shed (503).
func (o Outcome) ShedFrac() float64 { return frac(o.Shed, o.Total) }

// TimeoutFrac is the share of requests that timed out.
func (o Outcome) TimeoutFrac() float64 { return frac(o.Timeouts, o.Total) }

// ErrFrac is the share of requests that failed otherwise.
func (o Outcome) ErrFrac() float64 { return frac(o.Errors, o.Total) }

func frac(n, total int) float64 {
	if total == 0 {
		return 0
	}
	return float64(n) / float64(total)
}

// Attack sends GET url open-loop at rate per second for d and summarises the answers. A request unanswered after
// timeout counts as a timeout.
func Attack(url string, rate float64, d, timeout time.Duration) Outcome {
	_, out := AttackAfter(url, rate, 0, d, timeout)
	return out
}

// AttackAfter sends GET url open-loop at rate per second for warm and then d, without a pause between them, and
// summarises the requests sent in each part apart: onset (the first warm) and steady (the d after it). It
// measures how a server holds up under a load it has already met, beside how it meets it.
func AttackAfter(url string, rate float64, warm, d, timeout time.Duration) (onset, steady Outcome) {
	parts := AttackSteps(url, []Step{{rate, warm}, {rate, d}}, timeout)
	return parts[0], parts[1]
}

// Step is one part of a stepped open-loop attack: Rate requests per second for D.
type Step struct {
	Rate float64
	D    time.Duration
}

// AttackSteps sends GET url open-loop at each step's rate for its length, one step after the other without a
// pause, and summarises the requests sent in each step apart (by send time, so a request sent just before a step
// and answered after it counts in the earlier step). A request unanswered after timeout counts as a timeout.
func AttackSteps(url string, steps []Step, timeout time.Duration) []Outcome {
	// A client of our own, so that its idle connections (and their goroutines) end with the attack.
	transport := &http.Transport{MaxIdleConnsPerHost: 20000}
	defer transport.CloseIdleConnections()
	atk := vegeta.NewAttacker(vegeta.Client(&http.Client{Timeout: timeout, Transport: transport}),
		vegeta.Workers(64), vegeta.MaxWorkers(20000))
	target := vegeta.NewStaticTargeter(vegeta.Target{Method: "GET", URL: url})
	start := time.Now()
	parts := make([]summary, len(steps))
	var total time.Duration
	for i, s := range steps {
		parts[i] = summary{start: start.Add(total), end: start.Add(total + s.D)}
		total += s.D
	}
	for res := range atk.Attack(target, stepPacer(steps), total, "scenario") {
		i := 0
		for i < len(parts)-1 && !res.Timestamp.Before(parts[i].end) {
			i++
		}
		parts[i].add(res)
	}
	out := make([]Outcome, len(steps))
	for i, s := range steps {
		out[i] = parts[i].outcome(s.Rate, s.D)
	}
	return out
}

// stepPacer paces a vegeta attack through steps: the hits due by an elapsed time are each finished step's rate ×
// length plus the current step's rate × its time so far. Fractional rates are kept (a quarter of a small
// capacity matters at low rates).
type stepPacer []Step

// Pace sends at once when the next hit is due, else waits until it is (or until the next step begins).
func (sp stepPacer) Pace(elapsed time.Duration, hits uint64) (time.Duration, bool) {
	var begin time.Duration
	due := 0.0 // hits due by the start of the step
	for _, s := range sp {
		if elapsed < begin+s.D {
			if float64(hits)+1 <= due+s.Rate*(elapsed-begin).Seconds() {
				return 0, false
			}
			if s.Rate > 0 {
				next := begin + time.Duration((float64(hits)+1-due)/s.Rate*float64(time.Second))
				if next < begin+s.D {
					return next - elapsed, false
				}
			}
			return begin + s.D - elapsed, false
		}
		due += s.Rate * s.D.Seconds()
		begin += s.D
	}
	return 0, true
}

// Rate is the current step's rate.
func (sp stepPacer) Rate(elapsed time.Duration) float64 {
	var begin time.Duration
	for _, s := range sp {
		if begin += s.D; elapsed < begin {
			return s.Rate
		}
	}
	return 0
}

// summary accumulates attack results.
type summary struct {
	start, end                       time.Time
	ok                               []time.Duration
	total, shed, timeouts, errs, win int
	firstShed, lastShed              time.Duration
}

func (s *summary) add(r *vegeta.Result) {
	s.total++
	switch {
	case r.Code == http.StatusOK:
		s.ok = append(s.ok, r.Latency)
		if !r.End().After(s.end) {
			s.win++
		}
	case r.Code == http.StatusServiceUnavailable:
		s.shed++
		if at := r.End().Sub(s.start); s.firstShed == 0 || at < s.firstShed {
			s.firstShed = max(at, time.Nanosecond)
		}
		if at := r.End().Sub(s.start); at > s.lastShed {
			s.lastShed = at
		}
	case r.Code == 0 && isTimeout(r.Error):
		s.timeouts++
	default:
		s.errs++
	}
}

func (s *summary) outcome(rate float64, d time.Duration) Outcome {
	slices.Sort(s.ok)
	o := Outcome{Offered: rate, Total: s.total, OK: len(s.ok), Shed: s.shed, Timeouts: s.timeouts, Errors: s.errs,
		FirstShed: s.firstShed, LastShed: s.lastShed}
	if d > 0 {
		o.Goodput = float64(s.win) / d.Seconds()
	}
	if n := len(s.ok); n > 0 {
		o.P50, o.P99 = s.ok[n/2], s.ok[min(n-1, n*99/100)]
	}
	return o
}

// isTimeout tells a client-side timeout (http.Client.Timeout, a dial or read deadline) from other failures in
// vegeta's error text: vegeta keeps only the message.
func isTimeout(msg string) bool {
	return strings.Contains(msg, "Client.Timeout") || strings.Contains(msg, "deadline exceeded") ||
		strings.Contains(msg, "i/o timeout")
}

// Capacity measures throughput (200s per second) with a closed loop of 16 concurrent clients for d.
func Capacity(url string, d time.Duration) float64 {
	var n atomic.Int64
	var wg sync.WaitGroup
	stop := time.Now().Add(d)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	for range 16 {
		wg.Go(func() {
			for time.Now().Before(stop) {
				resp, err := client.Get(url)
				if err != nil {
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body) // read to EOF, so the connection is reused
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					n.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return float64(n.Load()) / d.Seconds()
}
