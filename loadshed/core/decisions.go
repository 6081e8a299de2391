package core

import "sync/atomic"

// decisions counts one priority's outcomes and spreads its admissions. Padding keeps the two priorities on
// separate cache lines.
type decisions struct {
	admitted atomic.Uint64
	rejected atomic.Uint64
	credit   atomic.Int64 // see spread
	_        [40]byte
}

// creditOne is one request in decisions.credit's fixed point.
const creditOne = 1 << 32

// spreadGain is how strongly spread pulls the admitted count back to its share: the bias per request owed, at
// an admitted share of one half. Stronger keeps the count closer (an rms of 0.8 requests at 0.2) but lets the
// admissions fall into a rhythm that can favour some of the clients whose requests take turns; at 0.2 each such
// client still gets its share within the coins' own noise.
const spreadGain = 0.2

// spread decides one request while the shedding probability prob is in (0, 1): it reports whether to reject it.
//
// Independent coins, one per request, admit the share 1-prob on average, but the count they admit out of n
// requests strays by √(n·prob·(1-prob)): they turn a steady stream of requests into a random one, which queues.
// spread keeps a credit, the admissions owed (each request adds 1-prob, each admission takes 1), and admits each
// request with probability 1-prob biased by the credit. The count admitted then stays within a few requests of
// its share however many requests pass, and each decision is still a draw of its own, so no client is favoured
// by the order of its requests.
//
// Concurrent callers read the credit a moment apart; the bias corrects what one of them got wrong.
func (d *decisions) spread(prob, r float64) bool {
	q := 1 - prob
	owed := float64(d.credit.Load()) / creditOne
	if r < q+spreadGain*4*q*prob*owed {
		d.credit.Add(int64((q - 1) * creditOne))
		return false
	}
	d.credit.Add(int64(q * creditOne))
	return true
}
