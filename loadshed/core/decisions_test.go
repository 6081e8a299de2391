package core

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

func TestSpreadAdmitsTheShareEvenly(t *testing.T) {
	// Over every prefix of the requests the count admitted stays within a few requests of n·(1-prob).
	// Independent coins stray by √(n·prob·(1-prob)): about 70 after 20 000 requests at prob 0.5.
	for _, prob := range []float64{1e-6, 0.01, 0.1, 0.25, 0.5, 0.575, 0.75, 0.9, 0.99, 1 - 1e-6} {
		var d decisions
		rng := rand.New(rand.NewPCG(1, uint64(prob*1e6)))
		admitted, worst := 0, 0.0
		const n = 20000
		for i := 1; i <= n; i++ {
			if !d.spread(prob, rng.Float64()) {
				admitted++
			}
			worst = max(worst, math.Abs(float64(admitted)-float64(i)*(1-prob)))
		}
		if worst > 8 {
			t.Errorf("prob %v: the admitted count strayed %.2f from its share", prob, worst)
		}
	}
}

func TestSpreadDoesNotLockOntoTakingTurns(t *testing.T) {
	// Clients whose requests take turns each get about their share, at the probabilities where a strict
	// pattern (admit every second or third request) would serve one client only.
	for _, tc := range []struct {
		prob    float64
		clients int
	}{{0.5, 2}, {0.5, 4}, {2.0 / 3, 3}, {0.75, 2}, {0.25, 4}, {0.9, 10}, {0.95, 20}, {0.6, 5}} {
		var d decisions
		rng := rand.New(rand.NewPCG(2, uint64(tc.clients)))
		got := make([]int, tc.clients)
		const rounds = 20000
		for range rounds {
			for c := range tc.clients {
				if !d.spread(tc.prob, rng.Float64()) {
					got[c]++
				}
			}
		}
		want := rounds * (1 - tc.prob)
		for c, n := range got {
			if math.Abs(float64(n)-want) > 0.1*want {
				t.Errorf("prob %v, %d clients taking turns: client %d was admitted %d times, want %.0f ± 10 %%",
					tc.prob, tc.clients, c, n, want)
			}
		}
	}
}

func TestSpreadConcurrentCallersKeepTheShare(t *testing.T) {
	var d decisions
	const goroutines, each, prob = 8, 20000, 0.6
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted := 0
	for g := range goroutines {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(3, uint64(g)))
			n := 0
			for range each {
				if !d.spread(prob, rng.Float64()) {
					n++
				}
			}
			mu.Lock()
			admitted += n
			mu.Unlock()
		})
	}
	wg.Wait()
	want := goroutines * each * (1 - prob)
	// Callers that read the credit a moment apart still leave the total within a few requests of its share.
	if math.Abs(float64(admitted)-want) > 8+goroutines {
		t.Errorf("%d goroutines admitted %d, want %.0f", goroutines, admitted, want)
	}
}

func TestSpreadKeepsASteadyStreamSteady(t *testing.T) {
	// Why the rejections are spread: a steady stream of requests at twice what one server can serve, shed at
	// p = 0.55, leaves 0.9 of the server's capacity. Spread, the admitted stream stays steady: its p99 wait is
	// 2–2.5 service times over seeds. Thinned by independent coins it turns random: 10.5–12.5.
	const (
		service  = 1.0 // the time the server takes for one request
		gap      = 0.5 // between arrivals: twice the server's rate
		prob     = 0.55
		requests = 200000
	)
	p99 := func(decide func(r float64) bool) float64 {
		rng := rand.New(rand.NewPCG(4, 5))
		free := 0.0 // when the server is next free
		var waits []float64
		for i := range requests {
			at := float64(i) * gap
			if decide(rng.Float64()) {
				continue
			}
			start := max(at, free)
			waits = append(waits, start-at)
			free = start + service
		}
		slices.Sort(waits)
		return waits[len(waits)*99/100]
	}
	var d decisions
	spread := p99(func(r float64) bool { return d.spread(prob, r) })
	coins := p99(func(r float64) bool { return r < prob })
	if spread > 3*service || coins < 8*service {
		t.Fatalf("p99 wait: spread %.2f, coins %.2f service times; want spread at most 3 and coins at least 8", spread, coins)
	}
}
