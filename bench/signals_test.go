package bench

import (
	"strings"
	"testing"
)

func TestParseSignals(t *testing.T) {
	got, err := ParseSignals(" default, cpu,fixed=0.56 ,fixed=0,fixed=1")
	if err != nil || strings.Join(got, "|") != "default|cpu|fixed=0.56|fixed=0|fixed=1" {
		t.Fatalf("ParseSignals: %q, %v", got, err)
	}
	for _, bad := range []string{"", " , ", "nope", "fixed=", "fixed=x", "fixed=-0.1", "fixed=1.01", "fixed=NaN", "fixed=Inf", "FIXED=0.5"} {
		if got, err := ParseSignals(bad); err == nil {
			t.Errorf("ParseSignals(%q) = %q, want an error", bad, got)
		}
	}
}

func TestFixedSignalReadsItsLoad(t *testing.T) {
	for name, want := range map[string]float64{"fixed=0": 0, "fixed=0.56": 0.56, "fixed=1": 1, "fixed=1e-9": 1e-9} {
		sig, err := Signal(name)
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if got, err := sig.Load(); err != nil || got != want {
				t.Fatalf("%s read %v, %v; want %v", name, got, err, want)
			}
		}
	}
}
