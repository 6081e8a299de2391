package core

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

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

func TestDetectCPUReadsTheLimitedGroupsThrottling(t *testing.T) {
	proc := func() (time.Duration, error) { return time.Second, nil }
	tests := []struct {
		name  string
		files map[string]string
		want  uint64 // 0: no throttle counter
	}{
		{
			name: "v2: the pod's quota binds, so its count",
			files: map[string]string{
				"/proc/self/cgroup":                         "0::/kubepods/pod1/ctr\n",
				"/proc/self/mountinfo":                      miV2,
				"/sys/fs/cgroup/kubepods/pod1/ctr/cpu.max":  "max 100000\n",
				"/sys/fs/cgroup/kubepods/pod1/ctr/cpu.stat": "usage_usec 2500\nnr_throttled 3\n",
				"/sys/fs/cgroup/kubepods/pod1/cpu.max":      "100000 100000\n",
				"/sys/fs/cgroup/kubepods/pod1/cpu.stat":     "usage_usec 9000\nnr_periods 40\nnr_throttled 17\n",
			},
			want: 17,
		},
		{
			name: "v1: the cpu controller's cpu.stat",
			files: map[string]string{
				"/proc/self/cgroup":                         "5:cpuset:/\n3:cpuacct:/shop\n2:cpu:/shop\n0::/\n",
				"/proc/self/mountinfo":                      miV1Separate,
				"/sys/fs/cgroup/cpu/shop/cpu.cfs_quota_us":  "50000\n",
				"/sys/fs/cgroup/cpu/shop/cpu.cfs_period_us": "100000\n",
				"/sys/fs/cgroup/cpu/shop/cpu.stat":          "nr_periods 9\nnr_throttled 4\nthrottled_time 12\n",
				"/sys/fs/cgroup/cpuacct/shop/cpuacct.usage": "11\n",
			},
			want: 4,
		},
		{
			name: "v2 without the count: unknown, never throttled",
			files: map[string]string{
				"/proc/self/cgroup":         "0::/k\n",
				"/proc/self/mountinfo":      miV2,
				"/sys/fs/cgroup/k/cpu.max":  "50000 100000\n",
				"/sys/fs/cgroup/k/cpu.stat": "usage_usec 2500\n",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := detectCPU(hostFS{root: writeTree(t, tt.files)}, 0, 4, proc)
			if p.source == SourceProcess {
				t.Fatalf("detectCPU fell back to the process: %s", p.reason)
			}
			if tt.want == 0 {
				if p.throttled != nil || !strings.Contains(p.reason, "throttling unknown") {
					t.Fatalf("a cpu.stat without nr_throttled gave a throttle counter (%s)", p.reason)
				}
				return
			}
			if p.throttled == nil {
				t.Fatalf("no throttle counter: %s", p.reason)
			}
			if n, err := p.throttled(); err != nil || n != tt.want {
				t.Fatalf("throttled() = %v, %v; want %v", n, err, tt.want)
			}
		})
	}
}

func TestCPUTellsAThrottledInterval(t *testing.T) {
	clk := &fakeClock{now: time.Unix(1000, 0)}
	var used time.Duration
	var throttles uint64
	var throttleErr error
	c := &CPU{
		capacity: 1,
		usage:    func() (time.Duration, error) { return used, nil },
		throttle: func() (uint64, error) { return throttles, throttleErr },
		now:      func() time.Time { return clk.now },
		sleep:    func(d time.Duration) { clk.now = clk.now.Add(d) },
	}
	read := func(newThrottles uint64) bool {
		t.Helper()
		clk.now, used, throttles = clk.now.Add(20*time.Millisecond), used+10*time.Millisecond, newThrottles
		if _, err := c.Load(); err != nil {
			t.Fatal(err)
		}
		return c.Throttled()
	}
	if read(0) {
		t.Fatal("the first reading counts as throttled")
	}
	if !read(2) {
		t.Fatal("a count that grew is not a throttled interval")
	}
	if read(2) {
		t.Fatal("a count that stayed is a throttled interval")
	}
	throttleErr = errors.New("gone")
	if read(5) {
		t.Fatal("an unreadable count is a throttled interval")
	}
	throttleErr = nil
	if !read(6) || read(6) {
		t.Fatal("after a failed read the count is not followed again")
	}
	// A process without a quota is never throttled.
	if (&CPU{}).Throttled() {
		t.Fatal("a CPU without a throttle counter says throttled")
	}
}
