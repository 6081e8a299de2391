package core

import (
	"os"
	"path/filepath"
	"testing"
)

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
