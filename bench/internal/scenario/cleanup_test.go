package scenario

import (
	"slices"
	"testing"
)

func TestCleanup(t *testing.T) {
	var c Cleanup
	var ran []string
	c.Add(func() { ran = append(ran, "group") })
	undo := c.Add(func() { ran = append(ran, "app") })
	c.Add(func() { ran = append(ran, "neighbours") })

	undo()
	undo() // a second undo does nothing
	c.Run()
	c.Run() // nothing left
	if want := []string{"app", "neighbours", "group"}; !slices.Equal(ran, want) {
		t.Fatalf("ran %v, want %v (undo at once, then the rest last first, each once)", ran, want)
	}
}

func TestParseList(t *testing.T) {
	known := []string{"default", "cpu", "sched"}
	got, err := ParseList(" cpu, default,,", known)
	if err != nil || !slices.Equal(got, []string{"cpu", "default"}) {
		t.Fatalf("got %v, %v", got, err)
	}
	if _, err := ParseList("cpu,bogus", known); err == nil {
		t.Fatal("an unknown item was accepted")
	}
	if _, err := ParseList(" , ", known); err == nil {
		t.Fatal("an empty list was accepted")
	}
}
