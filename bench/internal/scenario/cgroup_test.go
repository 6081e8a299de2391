package scenario

import (
	"strings"
	"testing"
)

// This machine's layout: cpu and cpuacct mounted apart, a hybrid cgroup2 without CPU control.
const separateMounts = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`

// Docker's layout: cpu and cpuacct co-mounted, the container's group mounted as the top.
const containerMounts = `1 0 0:1 / / rw - overlay overlay rw
2 1 0:2 /docker/abc /sys/fs/cgroup/cpu,cpuacct ro,nosuid master:9 - cgroup cgroup rw,cpu,cpuacct
3 1 0:3 / /sys/fs/cgroup/with\040space rw shared:4 - cgroup cgroup rw,cpuset
`

func TestOwnGroupDir(t *testing.T) {
	tests := []struct {
		name, mountinfo, cgroup, controller string
		want, wantErr                       string
	}{
		{name: "root group, separate mounts", mountinfo: separateMounts,
			cgroup: "2:cpuacct:/\n1:cpu:/\n0::/\n", controller: "cpuacct", want: "/sys/fs/cgroup/cpuacct"},
		{name: "nested group", mountinfo: separateMounts,
			cgroup: "2:cpuacct:/a/b\n1:cpu:/c\n", controller: "cpu", want: "/sys/fs/cgroup/cpu/c"},
		{name: "the other controller's group", mountinfo: separateMounts,
			cgroup: "2:cpuacct:/a/b\n1:cpu:/c\n", controller: "cpuacct", want: "/sys/fs/cgroup/cpuacct/a/b"},
		{name: "container: group mounted as the top", mountinfo: containerMounts,
			cgroup: "4:cpu,cpuacct:/docker/abc\n", controller: "cpu", want: "/sys/fs/cgroup/cpu,cpuacct"},
		{name: "container: a subgroup of the mounted one", mountinfo: containerMounts,
			cgroup: "4:cpu,cpuacct:/docker/abc/sub\n", controller: "cpuacct", want: "/sys/fs/cgroup/cpu,cpuacct/sub"},
		{name: "group outside the mount falls back to its top", mountinfo: containerMounts,
			cgroup: "4:cpu,cpuacct:/docker/abcdef\n", controller: "cpu", want: "/sys/fs/cgroup/cpu,cpuacct"},
		{name: "escaped mount point", mountinfo: containerMounts,
			cgroup: "3:cpuset:/x\n", controller: "cpuset", want: "/sys/fs/cgroup/with space/x"},
		{name: "cgroup v2 only", mountinfo: "1 0 0:1 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
			cgroup: "0::/user.slice\n", controller: "cpu", wantErr: "no cgroup v1 cpu hierarchy"},
		{name: "controller in /proc/self/cgroup but not mounted", mountinfo: separateMounts,
			cgroup: "5:memory:/\n", controller: "memory", wantErr: "not mounted"},
		{name: "cpuacct is not cpu", mountinfo: separateMounts,
			cgroup: "2:cpuacct:/\n", controller: "cpu", wantErr: "no cgroup v1 cpu hierarchy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ownGroupDir(tt.mountinfo, tt.cgroup, tt.controller)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %q, %v; want an error containing %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestStalePID(t *testing.T) {
	tests := []struct {
		name    string
		want    int
		wantOK  bool
		comment string
	}{
		{"fiberguard-overload-123", 123, true, "prefix-PID"},
		{"fiberguard-overload-123-half", 123, true, "prefix-PID-suffix"},
		{"fiberguard-overloads-123", 0, false, "another prefix"},
		{"fiberguard-overload-x1", 0, false, "no PID"},
		{"fiberguard-overload-0", 0, false, "PID 0"},
		{"fiberguard-overload", 0, false, "the prefix alone"},
	}
	for _, tt := range tests {
		got, ok := stalePID(tt.name, "fiberguard-overload")
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("%s (%s): got %d, %v; want %d, %v", tt.name, tt.comment, got, ok, tt.want, tt.wantOK)
		}
	}
}
