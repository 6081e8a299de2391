package loadshed

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
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

func TestParseMountinfoEscapes(t *testing.T) {
	mi := `30 25 0:26 / /sys/fs/cgroup/my\040cpu rw,nosuid - cgroup cgroup rw,cpu
31 25 0:27 / /proc rw - proc proc rw
`
	ms := parseMountinfo([]byte(mi))
	if len(ms) != 1 || ms[0].point != "/sys/fs/cgroup/my cpu" || !hasOpt(ms[0].opts, "cpu") {
		t.Fatalf("parseMountinfo = %+v", ms)
	}
}

// Fixture mountinfo lines for the layouts seen in the wild.
const (
	// cpu and cpuacct mounted separately, with a hybrid cgroup2 that holds no CPU controller.
	miV1Separate = `24 18 0:22 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755
25 24 0:23 / /sys/fs/cgroup/unified rw,nosuid - cgroup2 cgroup2 rw,nsdelegate
26 24 0:24 / /sys/fs/cgroup/cpu rw,nosuid - cgroup cgroup rw,cpu
27 24 0:25 / /sys/fs/cgroup/cpuacct rw,nosuid - cgroup cgroup rw,cpuacct
28 24 0:26 / /sys/fs/cgroup/cpuset rw,nosuid - cgroup cgroup rw,cpuset
`
	// A v1 cpu controller without cpuacct.
	miV1CPUOnly = `24 18 0:22 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755
26 24 0:24 / /sys/fs/cgroup/cpu rw,nosuid - cgroup cgroup rw,cpu
`
	// Docker's co-mounted cpu,cpuacct with the container's own group as the mount root.
	miV1Docker = `600 599 0:30 /docker/abc /sys/fs/cgroup/cpu,cpuacct ro,nosuid - cgroup cgroup rw,cpu,cpuacct
601 599 0:31 /docker/abc /sys/fs/cgroup/cpuset ro,nosuid - cgroup cgroup rw,cpuset
`
	miV2 = `30 25 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime - cgroup2 cgroup2 rw,nsdelegate
`
)

func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestDetectCPU(t *testing.T) {
	const procBusy = 42 * time.Second
	proc := func() (time.Duration, error) { return procBusy, nil }

	tests := []struct {
		name       string
		files      map[string]string
		override   float64
		hostN      int
		source     string
		capacity   float64
		usage      time.Duration
		reasonPart string
	}{
		{
			name: "v1 separate mounts with a half-CPU quota",
			files: map[string]string{
				"/proc/self/cgroup":                         "5:cpuset:/\n3:cpuacct:/shop\n2:cpu:/shop\n0::/\n",
				"/proc/self/mountinfo":                      miV1Separate,
				"/sys/fs/cgroup/cpu/shop/cpu.cfs_quota_us":  "50000\n",
				"/sys/fs/cgroup/cpu/shop/cpu.cfs_period_us": "100000\n",
				"/sys/fs/cgroup/cpuacct/shop/cpuacct.usage": "7000000\n",
				"/sys/fs/cgroup/unified/cpu.stat":           "usage_usec 1\n",
				"/sys/fs/cgroup/cpuset/cpuset.cpus":         "0-1\n",
			},
			hostN: 2, source: "cgroup v1", capacity: 0.5, usage: 7 * time.Millisecond,
		},
		{
			name: "v1 docker co-mounted, group is the mount root",
			files: map[string]string{
				"/proc/self/cgroup":                            "4:cpu,cpuacct:/docker/abc\n3:cpuset:/docker/abc\n",
				"/proc/self/mountinfo":                         miV1Docker,
				"/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us":  "200000",
				"/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": "100000",
				"/sys/fs/cgroup/cpu,cpuacct/cpuacct.usage":     "5",
				"/sys/fs/cgroup/cpuset/cpuset.cpus":            "0-7",
			},
			hostN: 8, source: "cgroup v1", capacity: 2, usage: 5,
		},
		{
			name: "v1 cpuset smaller than the quota",
			files: map[string]string{
				"/proc/self/cgroup":                            "4:cpu,cpuacct:/docker/abc\n3:cpuset:/docker/abc\n",
				"/proc/self/mountinfo":                         miV1Docker,
				"/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us":  "400000",
				"/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": "100000",
				"/sys/fs/cgroup/cpu,cpuacct/cpuacct.usage":     "5",
				"/sys/fs/cgroup/cpuset/cpuset.cpus":            "2-3",
			},
			hostN: 8, source: "cgroup v1", capacity: 2, usage: 5, reasonPart: "cpuset allows 2",
		},
		{
			name: "v1 without quota reads this process",
			files: map[string]string{
				"/proc/self/cgroup":                    "3:cpuacct:/\n2:cpu:/\n",
				"/proc/self/mountinfo":                 miV1Separate,
				"/sys/fs/cgroup/cpu/cpu.cfs_quota_us":  "-1\n",
				"/sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000\n",
				"/sys/fs/cgroup/cpuacct/cpuacct.usage": "9\n",
			},
			hostN: 2, source: "process", capacity: 2, usage: procBusy, reasonPart: "no CPU limit",
		},
		{
			name: "v1 without quota but a narrow cpuset",
			files: map[string]string{
				"/proc/self/cgroup":                     "5:cpuset:/pin\n3:cpuacct:/\n2:cpu:/\n",
				"/proc/self/mountinfo":                  miV1Separate,
				"/sys/fs/cgroup/cpu/cpu.cfs_quota_us":   "-1\n",
				"/sys/fs/cgroup/cpu/cpu.cfs_period_us":  "100000\n",
				"/sys/fs/cgroup/cpuacct/cpuacct.usage":  "9\n",
				"/sys/fs/cgroup/cpuset/pin/cpuset.cpus": "3\n",
			},
			hostN: 4, source: "process", capacity: 1, usage: procBusy, reasonPart: "cpuset allows 1",
		},
		{
			name: "v1 usage file missing: this process over the quota",
			files: map[string]string{
				"/proc/self/cgroup":                      "3:cpuacct:/g\n2:cpu:/g\n",
				"/proc/self/mountinfo":                   miV1Separate,
				"/sys/fs/cgroup/cpu/g/cpu.cfs_quota_us":  "50000\n",
				"/sys/fs/cgroup/cpu/g/cpu.cfs_period_us": "100000\n",
			},
			hostN: 2, source: "process", capacity: 0.5, usage: procBusy, reasonPart: "usage unreadable",
		},
		{
			name: "v1 garbage quota falls back",
			files: map[string]string{
				"/proc/self/cgroup":                      "3:cpuacct:/g\n2:cpu:/g\n",
				"/proc/self/mountinfo":                   miV1Separate,
				"/sys/fs/cgroup/cpu/g/cpu.cfs_quota_us":  "lots\n",
				"/sys/fs/cgroup/cpu/g/cpu.cfs_period_us": "100000\n",
				"/sys/fs/cgroup/cpuacct/g/cpuacct.usage": "9\n",
			},
			hostN: 2, source: "process", capacity: 2, usage: procBusy, reasonPart: "quota unreadable",
		},
		{
			name: "v2 half a CPU",
			files: map[string]string{
				"/proc/self/cgroup":                             "0::/app.slice/web.service\n",
				"/proc/self/mountinfo":                          miV2,
				"/sys/fs/cgroup/app.slice/web.service/cpu.max":  "50000 100000\n",
				"/sys/fs/cgroup/app.slice/web.service/cpu.stat": "usage_usec 2500\nuser_usec 2000\n",
			},
			hostN: 4, source: "cgroup v2", capacity: 0.5, usage: 2500 * time.Microsecond,
		},
		{
			name: "v2 max reads this process",
			files: map[string]string{
				"/proc/self/cgroup":       "0::/\n",
				"/proc/self/mountinfo":    miV2,
				"/sys/fs/cgroup/cpu.max":  "max 100000\n",
				"/sys/fs/cgroup/cpu.stat": "usage_usec 2500\n",
			},
			hostN: 4, source: "process", capacity: 4, usage: procBusy, reasonPart: "no CPU limit",
		},
		{
			name: "v2 garbage cpu.max falls back",
			files: map[string]string{
				"/proc/self/cgroup":       "0::/\n",
				"/proc/self/mountinfo":    miV2,
				"/sys/fs/cgroup/cpu.max":  "lots\n",
				"/sys/fs/cgroup/cpu.stat": "usage_usec 2500\n",
			},
			hostN: 4, source: "process", capacity: 4, usage: procBusy, reasonPart: "cpu.max",
		},
		{
			name: "hybrid unified hierarchy without a cpu controller",
			files: map[string]string{
				"/proc/self/cgroup":               "0::/\n",
				"/proc/self/mountinfo":            miV1Separate,
				"/sys/fs/cgroup/unified/cpu.stat": "usage_usec 1\n",
			},
			hostN: 2, source: "process", capacity: 2, usage: procBusy, reasonPart: "without the cpu controller",
		},
		{
			name: "v2 limit on the parent (a pod) binds an unlimited container",
			files: map[string]string{
				"/proc/self/cgroup":                         "0::/kubepods/pod1/ctr\n",
				"/proc/self/mountinfo":                      miV2,
				"/sys/fs/cgroup/kubepods/pod1/ctr/cpu.max":  "max 100000\n",
				"/sys/fs/cgroup/kubepods/pod1/ctr/cpu.stat": "usage_usec 2500\n",
				"/sys/fs/cgroup/kubepods/pod1/cpu.max":      "200000 100000\n",
				"/sys/fs/cgroup/kubepods/cpu.max":           "max 100000\n",
			},
			hostN: 8, source: "cgroup v2", capacity: 2, usage: 2500 * time.Microsecond,
			reasonPart: "in /sys/fs/cgroup/kubepods/pod1",
		},
		{
			name: "v2 tighter parent wins over the group's own limit",
			files: map[string]string{
				"/proc/self/cgroup":                 "0::/slice/svc\n",
				"/proc/self/mountinfo":              miV2,
				"/sys/fs/cgroup/slice/svc/cpu.max":  "300000 100000\n",
				"/sys/fs/cgroup/slice/svc/cpu.stat": "usage_usec 7\n",
				"/sys/fs/cgroup/slice/cpu.max":      "100000 100000\n",
			},
			hostN: 8, source: "cgroup v2", capacity: 1, usage: 7 * time.Microsecond,
		},
		{
			name: "v2 group's own limit wins over a looser parent",
			files: map[string]string{
				"/proc/self/cgroup":                 "0::/slice/svc\n",
				"/proc/self/mountinfo":              miV2,
				"/sys/fs/cgroup/slice/svc/cpu.max":  "50000 100000\n",
				"/sys/fs/cgroup/slice/svc/cpu.stat": "usage_usec 7\n",
				"/sys/fs/cgroup/slice/cpu.max":      "400000 100000\n",
			},
			hostN: 8, source: "cgroup v2", capacity: 0.5, usage: 7 * time.Microsecond,
			reasonPart: "in /sys/fs/cgroup/slice/svc",
		},
		{
			name: "v1 quota on the parent group",
			files: map[string]string{
				"/proc/self/cgroup":                            "3:cpuacct:/app/web\n2:cpu:/app/web\n",
				"/proc/self/mountinfo":                         miV1Separate,
				"/sys/fs/cgroup/cpu/app/web/cpu.cfs_quota_us":  "-1\n",
				"/sys/fs/cgroup/cpu/app/web/cpu.cfs_period_us": "100000\n",
				"/sys/fs/cgroup/cpu/app/cpu.cfs_quota_us":      "150000\n",
				"/sys/fs/cgroup/cpu/app/cpu.cfs_period_us":     "100000\n",
				"/sys/fs/cgroup/cpu/cpu.cfs_quota_us":          "-1\n",
				"/sys/fs/cgroup/cpu/cpu.cfs_period_us":         "100000\n",
				"/sys/fs/cgroup/cpuacct/app/web/cpuacct.usage": "11\n",
			},
			hostN: 4, source: "cgroup v1", capacity: 1.5, usage: 11, reasonPart: "in /sys/fs/cgroup/cpu/app",
		},
		{
			name:  "no /proc/self/cgroup",
			files: map[string]string{"/proc/self/mountinfo": miV2},
			hostN: 2, source: "process", capacity: 2, usage: procBusy, reasonPart: "no cgroup information",
		},
		{
			name: "override without a limit reads this process",
			files: map[string]string{
				"/proc/self/cgroup":       "0::/\n",
				"/proc/self/mountinfo":    miV2,
				"/sys/fs/cgroup/cpu.max":  "max 100000\n",
				"/sys/fs/cgroup/cpu.stat": "usage_usec 2500\n",
			},
			override: 1.5, hostN: 4, source: "process", capacity: 1.5, usage: procBusy,
			reasonPart: "Config.CPUs",
		},
		{
			name:     "override without cgroup information",
			files:    map[string]string{},
			override: 3, hostN: 8, source: "process", capacity: 3, usage: procBusy,
		},
		{
			name: "v1 quota with the group's cpuacct apart: this process over the quota",
			files: map[string]string{
				"/proc/self/cgroup":                         "3:cpuacct:/\n2:cpu:/shop\n0::/\n",
				"/proc/self/mountinfo":                      miV1Separate,
				"/sys/fs/cgroup/cpu/shop/cpu.cfs_quota_us":  "100000\n",
				"/sys/fs/cgroup/cpu/shop/cpu.cfs_period_us": "100000\n",
				"/sys/fs/cgroup/cpuacct/cpuacct.usage":      "123456789\n",
			},
			hostN: 2, source: "process", capacity: 1, usage: procBusy,
			reasonPart: "cpuacct group / is not its cpu group /shop",
		},
		{
			name: "v1 quota without a cpuacct mount: this process over the quota",
			files: map[string]string{
				"/proc/self/cgroup":                         "2:cpu:/shop\n",
				"/proc/self/mountinfo":                      miV1CPUOnly,
				"/sys/fs/cgroup/cpu/shop/cpu.cfs_quota_us":  "50000\n",
				"/sys/fs/cgroup/cpu/shop/cpu.cfs_period_us": "100000\n",
			},
			hostN: 4, source: "process", capacity: 0.5, usage: procBusy, reasonPart: "cpuacct controller is not mounted",
		},
		{
			name: "v1 quota on the parent: the parent's usage fills it",
			files: map[string]string{
				"/proc/self/cgroup":                            "3:cpuacct:/app/web\n2:cpu:/app/web\n",
				"/proc/self/mountinfo":                         miV1Separate,
				"/sys/fs/cgroup/cpu/app/web/cpu.cfs_quota_us":  "-1\n",
				"/sys/fs/cgroup/cpu/app/web/cpu.cfs_period_us": "100000\n",
				"/sys/fs/cgroup/cpu/app/cpu.cfs_quota_us":      "100000\n",
				"/sys/fs/cgroup/cpu/app/cpu.cfs_period_us":     "100000\n",
				"/sys/fs/cgroup/cpuacct/app/web/cpuacct.usage": "11\n",
				"/sys/fs/cgroup/cpuacct/app/cpuacct.usage":     "29\n",
			},
			hostN: 4, source: "cgroup v1", capacity: 1, usage: 29, reasonPart: "/sys/fs/cgroup/cpuacct/app/cpuacct.usage",
		},
		{
			name: "v2 limit on the pod: the pod's usage fills it",
			files: map[string]string{
				"/proc/self/cgroup":                         "0::/kubepods/pod1/ctr\n",
				"/proc/self/mountinfo":                      miV2,
				"/sys/fs/cgroup/kubepods/pod1/ctr/cpu.max":  "max 100000\n",
				"/sys/fs/cgroup/kubepods/pod1/ctr/cpu.stat": "usage_usec 2500\n",
				"/sys/fs/cgroup/kubepods/pod1/cpu.max":      "100000 100000\n",
				"/sys/fs/cgroup/kubepods/pod1/cpu.stat":     "usage_usec 9000\n",
			},
			hostN: 8, source: "cgroup v2", capacity: 1, usage: 9 * time.Millisecond,
		},
		{
			name: "no limit with a narrow cpuset: this process over the cpuset",
			files: map[string]string{
				"/proc/self/cgroup":                      "0::/k\n",
				"/proc/self/mountinfo":                   miV2,
				"/sys/fs/cgroup/k/cpu.max":               "max 100000\n",
				"/sys/fs/cgroup/k/cpu.stat":              "usage_usec 2500\n",
				"/sys/fs/cgroup/k/cpuset.cpus.effective": "0-2\n",
			},
			hostN: 16, source: "process", capacity: 3, usage: procBusy, reasonPart: "cpuset allows 3",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := detectCPU(hostFS{root: writeTree(t, tt.files)}, tt.override, tt.hostN, proc)
			if p.source != tt.source || math.Abs(p.capacity-tt.capacity) > 1e-9 {
				t.Fatalf("detectCPU = %s with %v CPUs (%s); want %s with %v", p.source, p.capacity, p.reason, tt.source, tt.capacity)
			}
			if !strings.Contains(p.reason, tt.reasonPart) {
				t.Errorf("reason %q does not mention %q", p.reason, tt.reasonPart)
			}
			u, err := p.usage()
			if err != nil || u != tt.usage {
				t.Errorf("usage() = %v, %v; want %v", u, err, tt.usage)
			}
		})
	}
}
