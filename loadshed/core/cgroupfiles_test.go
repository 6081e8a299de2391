package core

import (
	"errors"
	"testing"
	"time"
)

func TestParseCPUMax(t *testing.T) {
	tests := []struct {
		in        string
		want      float64
		unlimited bool
		bad       bool
	}{
		{"max 100000\n", 0, true, false},
		{"max\n", 0, true, false},
		{"50000 100000\n", 0.5, false, false},
		{"200000 100000", 2, false, false},
		{"150000", 1.5, false, false}, // period omitted: the kernel's default 100000
		{"", 0, false, true},
		{"abc 100000", 0, false, true},
		{"50000 0", 0, false, true},
		{"-1 100000", 0, false, true},
		{"1 2 3", 0, false, true},
	}
	for _, tt := range tests {
		got, err := parseCPUMax([]byte(tt.in))
		switch {
		case tt.unlimited:
			if !errors.Is(err, errUnlimited) {
				t.Errorf("parseCPUMax(%q) err = %v, want errUnlimited", tt.in, err)
			}
		case tt.bad:
			if err == nil || errors.Is(err, errUnlimited) {
				t.Errorf("parseCPUMax(%q) = %v, %v; want a parse error", tt.in, got, err)
			}
		case err != nil || got != tt.want:
			t.Errorf("parseCPUMax(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func TestParseCFSQuota(t *testing.T) {
	tests := []struct {
		quota, period string
		want          float64
		unlimited     bool
		bad           bool
	}{
		{"50000\n", "100000\n", 0.5, false, false},
		{"100000", "100000", 1, false, false},
		{"250000", "100000", 2.5, false, false},
		{"-1\n", "100000\n", 0, true, false},
		{"", "100000", 0, false, true},
		{"50000", "0", 0, false, true},
		{"50000", "x", 0, false, true},
		{"0", "100000", 0, false, true},
	}
	for _, tt := range tests {
		got, err := parseCFSQuota([]byte(tt.quota), []byte(tt.period))
		switch {
		case tt.unlimited:
			if !errors.Is(err, errUnlimited) {
				t.Errorf("parseCFSQuota(%q, %q) err = %v, want errUnlimited", tt.quota, tt.period, err)
			}
		case tt.bad:
			if err == nil || errors.Is(err, errUnlimited) {
				t.Errorf("parseCFSQuota(%q, %q) = %v, %v; want a parse error", tt.quota, tt.period, got, err)
			}
		case err != nil || got != tt.want:
			t.Errorf("parseCFSQuota(%q, %q) = %v, %v; want %v", tt.quota, tt.period, got, err, tt.want)
		}
	}
}

func TestParseUsage(t *testing.T) {
	if d, err := parseCpuacctUsage([]byte("1234567890\n")); err != nil || d != 1234567890*time.Nanosecond {
		t.Errorf("parseCpuacctUsage = %v, %v", d, err)
	}
	if _, err := parseCpuacctUsage([]byte("-5")); err == nil {
		t.Error("parseCpuacctUsage(-5) accepted")
	}
	stat := "usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\nnr_periods 0\n"
	if d, err := parseCPUStatUsage([]byte(stat)); err != nil || d != 2500*time.Millisecond {
		t.Errorf("parseCPUStatUsage = %v, %v", d, err)
	}
	if _, err := parseCPUStatUsage([]byte("user_usec 5\n")); err == nil {
		t.Error("parseCPUStatUsage without usage_usec accepted")
	}
	if _, err := parseCPUStatUsage([]byte("usage_usec x\n")); err == nil {
		t.Error("parseCPUStatUsage with a bad value accepted")
	}
}

func TestParseCPUSet(t *testing.T) {
	tests := []struct {
		in   string
		want int
		bad  bool
	}{
		{"0\n", 1, false},
		{"0-3\n", 4, false},
		{"0-3,8,10-11", 7, false},
		{"", 0, true},
		{"3-1", 0, true},
		{"a", 0, true},
	}
	for _, tt := range tests {
		got, err := parseCPUSet([]byte(tt.in))
		if (err != nil) != tt.bad || got != tt.want {
			t.Errorf("parseCPUSet(%q) = %v, %v; want %v (error %v)", tt.in, got, err, tt.want, tt.bad)
		}
	}
}
