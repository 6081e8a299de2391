package scenario

import (
	"log"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// Cleanup undoes what a driver set up (apps, neighbours, groups), last first, on return, on error and on
// interrupt.
type Cleanup struct {
	run   sync.Mutex // held while a step runs, so an interrupt exits only after it
	mu    sync.Mutex // guards steps
	steps []*step
}

type step struct{ f func() }

// Add registers f and returns a function that runs it now and unregisters it (later calls do nothing).
func (c *Cleanup) Add(f func()) (undo func()) {
	s := &step{f: f}
	c.mu.Lock()
	c.steps = append(c.steps, s)
	c.mu.Unlock()
	return func() {
		c.run.Lock()
		defer c.run.Unlock()
		if c.take(s) {
			f()
		}
	}
}

func (c *Cleanup) take(s *step) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, t := range c.steps {
		if t == s {
			c.steps = append(c.steps[:i], c.steps[i+1:]...)
			return true
		}
	}
	return false
}

// Run runs every registered step, last registered first, and unregisters them.
func (c *Cleanup) Run() {
	c.run.Lock()
	defer c.run.Unlock()
	c.mu.Lock()
	steps := c.steps
	c.steps = nil
	c.mu.Unlock()
	for i := len(steps) - 1; i >= 0; i-- {
		steps[i].f()
	}
}

// OnInterrupt makes SIGINT, SIGTERM and SIGHUP run the cleanup and exit with status 130. Call the returned
// function to stop watching.
func (c *Cleanup) OnInterrupt() (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case sig := <-ch:
			log.Printf("%v: cleaning up", sig)
			c.Run()
			os.Exit(130)
		case <-done:
		}
	})
	return func() {
		signal.Stop(ch)
		close(done)
		wg.Wait()
	}
}
