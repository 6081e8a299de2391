package core

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParsePressureSome(t *testing.T) {
	tests := []struct {
		name string
		data string
		want uint64
		bad  bool
	}{
		{"system file", "some avg10=1.50 avg60=0.80 avg300=0.20 total=123456\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", 123456, false},
		{"some line only", "some avg10=0.00 avg60=0.00 avg300=0.00 total=7", 7, false},
		{"full before some", "full avg10=0.00 avg60=0.00 avg300=0.00 total=99\nsome avg10=0.00 avg60=0.00 avg300=0.00 total=5\n", 5, false},
		{"no some line", "full avg10=0.00 total=1\n", 0, true},
		{"no total", "some avg10=0.00 avg60=0.00\n", 0, true},
		{"garbage total", "some total=lots\n", 0, true},
		{"empty", "", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parsePressureSome([]byte(tt.data))
			if (err != nil) != tt.bad || got != tt.want {
				t.Fatalf("parsePressureSome = %v, %v; want %v (error %v)", got, err, tt.want, tt.bad)
			}
		})
	}
}

func TestPressureLoad(t *testing.T) {
	tests := []struct {
		name      string
		prev, cur uint64
		elapsed   time.Duration
		want      float64
		bad       bool
	}{
		{"no stall", 100, 100, 20 * time.Millisecond, 0, false},
		{"stalled a quarter of the time", 0, 5000, 20 * time.Millisecond, 0.25, false},
		{"stalled all the time", 1000, 21000, 20 * time.Millisecond, 1, false},
		{"no time elapsed", 0, 10, 0, 0, true},
		{"total went backwards", 10, 5, time.Millisecond, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := pressureLoad(tt.prev, tt.cur, tt.elapsed)
			if (err != nil) != tt.bad || math.Abs(got-tt.want) > 1e-12 {
				t.Fatalf("pressureLoad = %v, %v; want %v (error %v)", got, err, tt.want, tt.bad)
			}
		})
	}
}

func TestNewPressureFindsTheGroupFile(t *testing.T) {
	const psi = "some avg10=0.00 avg60=0.00 avg300=0.00 total=%d\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
	t.Run("the v2 group's own file", func(t *testing.T) {
		root := writeTree(t, map[string]string{
			"/proc/self/cgroup":                     "0::/app\n",
			"/proc/self/mountinfo":                  miV2,
			"/sys/fs/cgroup/app/cpu.pressure":       "some avg10=0.00 avg60=0.00 avg300=0.00 total=1000\n",
			"/proc/pressure/cpu":                    "some avg10=0.00 avg60=0.00 avg300=0.00 total=5\n",
			"/sys/fs/cgroup/app/cpu.stat":           "usage_usec 1\n",
			"/sys/fs/cgroup/app/cgroup.controllers": "cpu\n",
		})
		now := time.Unix(100, 0)
		p, err := newPressure(hostFS{root: root}, func() time.Time { return now })
		if err != nil || p.File() != "/sys/fs/cgroup/app/cpu.pressure" || !strings.Contains(p.Reason(), "group") {
			t.Fatalf("newPressure = %v (%q), %v; want the group's file", p, p.Reason(), err)
		}
		if got, err := p.Load(); err != nil || got != 0 {
			t.Fatalf("first Load = %v, %v; want the baseline 0", got, err)
		}
		writeFile(t, root, "/sys/fs/cgroup/app/cpu.pressure", "some avg10=9.00 avg60=0.00 avg300=0.00 total=11000\n")
		now = now.Add(20 * time.Millisecond)
		if got, err := p.Load(); err != nil || math.Abs(got-0.5) > 1e-12 {
			t.Fatalf("Load = %v, %v; want 0.5 (10ms stalled in 20ms)", got, err)
		}
	})
	t.Run("the system file without a v2 group", func(t *testing.T) {
		root := writeTree(t, map[string]string{
			"/proc/self/cgroup":    "3:cpuacct:/\n2:cpu:/\n",
			"/proc/self/mountinfo": miV1CPUOnly,
			"/proc/pressure/cpu":   strings.Replace(psi, "%d", "5", 1),
		})
		p, err := newPressure(hostFS{root: root}, time.Now)
		if err != nil || p.File() != "/proc/pressure/cpu" || !strings.Contains(p.Reason(), "every task of the machine") {
			t.Fatalf("newPressure = %v, %v; want the system file, said plainly", p, err)
		}
	})
	t.Run("no pressure information", func(t *testing.T) {
		root := writeTree(t, map[string]string{"/proc/self/cgroup": "0::/\n", "/proc/self/mountinfo": miV2})
		if p, err := newPressure(hostFS{root: root}, time.Now); err == nil {
			t.Fatalf("newPressure = %v without any PSI file, want an error", p.File())
		}
	})
}

func writeFile(t *testing.T, root, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(root, filepath.FromSlash(name)), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
