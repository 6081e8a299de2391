package coretest

import (
	"strings"
	"sync"
)

// Buffer collects what a logger writes during a test; safe for concurrent use.
type Buffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
