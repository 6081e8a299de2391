package core

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// errUnlimited means the group sets no CPU limit.
var errUnlimited = errors.New("no CPU limit")

// parseCPUMax parses cgroup v2 cpu.max ("max 100000" or "50000 100000") into a number of CPUs.
func parseCPUMax(data []byte) (float64, error) {
	fields := strings.Fields(string(data))
	if len(fields) == 0 || len(fields) > 2 {
		return 0, fmt.Errorf("cpu.max: unexpected content %q", data)
	}
	if fields[0] == "max" {
		return 0, errUnlimited
	}
	quota, err := strconv.ParseFloat(fields[0], 64)
	if err != nil || quota <= 0 {
		return 0, fmt.Errorf("cpu.max: bad quota %q", fields[0])
	}
	period := 100000.0 // the kernel's default when the period is omitted
	if len(fields) == 2 {
		period, err = strconv.ParseFloat(fields[1], 64)
		if err != nil || period <= 0 {
			return 0, fmt.Errorf("cpu.max: bad period %q", fields[1])
		}
	}
	return quota / period, nil
}

// parseCFSQuota parses cgroup v1 cpu.cfs_quota_us and cpu.cfs_period_us into a number of CPUs.
func parseCFSQuota(quotaData, periodData []byte) (float64, error) {
	quota, err := strconv.ParseInt(strings.TrimSpace(string(quotaData)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("cpu.cfs_quota_us: %w", err)
	}
	if quota < 0 {
		return 0, errUnlimited
	}
	period, err := strconv.ParseInt(strings.TrimSpace(string(periodData)), 10, 64)
	if err != nil || period <= 0 {
		return 0, fmt.Errorf("cpu.cfs_period_us: bad period %q", bytes.TrimSpace(periodData))
	}
	if quota == 0 {
		return 0, errors.New("cpu.cfs_quota_us: zero quota")
	}
	return float64(quota) / float64(period), nil
}

// parseCpuacctUsage parses cgroup v1 cpuacct.usage (nanoseconds of CPU time).
func parseCpuacctUsage(data []byte) (time.Duration, error) {
	ns, err := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("cpuacct.usage: %w", err)
	}
	if ns > math.MaxInt64 {
		return 0, fmt.Errorf("cpuacct.usage: %d out of range", ns)
	}
	return time.Duration(ns), nil
}

// parseCPUStatUsage reads usage_usec from cgroup v2 cpu.stat.
func parseCPUStatUsage(data []byte) (time.Duration, error) {
	us, err := cpuStatField(data, "usage_usec")
	if err != nil {
		return 0, err
	}
	if us > math.MaxInt64 {
		return 0, fmt.Errorf("cpu.stat: bad usage_usec %q", strconv.FormatUint(us, 10))
	}
	return time.Duration(us) * time.Microsecond, nil
}

// parseThrottled reads nr_throttled, the count of periods in which the group's quota throttled it, from a cpu.stat
// (cgroup v1 in the cpu controller's directory, or v2).
func parseThrottled(data []byte) (uint64, error) { return cpuStatField(data, "nr_throttled") }

// cpuStatField reads the counter key of a cpu.stat ("key value" lines).
func cpuStatField(data []byte, key string) (uint64, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		k, val, ok := strings.Cut(sc.Text(), " ")
		if !ok || k != key {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(val), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("cpu.stat: bad %s %q", key, val)
		}
		return n, nil
	}
	return 0, fmt.Errorf("cpu.stat: no %s", key)
}

// parseCPUSet counts the CPUs of a cpuset list such as "0-3,8,10-11".
func parseCPUSet(data []byte) (int, error) {
	s := strings.TrimSpace(string(data))
	if s == "" {
		return 0, errors.New("cpuset: empty")
	}
	n := 0
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return 0, fmt.Errorf("cpuset: bad entry %q", part)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return 0, fmt.Errorf("cpuset: bad range %q", part)
			}
		}
		n += b - a + 1
	}
	return n, nil
}
