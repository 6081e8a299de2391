// Package scenario holds what the overload and environments commands share: cgroup v1 groups to confine an app,
// the app re-executed from the driver's own binary, neighbour processes, a calibrated CPU burn and the summary
// of an open-loop vegeta attack.
package scenario

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// period is the CFS period written with every quota: 100 ms, the kernel's default.
const period = 100000

// Group is a new cgroup v1 group in one or more controllers (the same directory when they are co-mounted),
// created below the driver's own group in each hierarchy.
type Group struct {
	Name string
	dirs map[string]string // controller → directory
}

// NewGroup creates the group name in each controller (e.g. "cpu", "cpuacct") and, when cpus > 0, gives it a CFS
// quota of cpus CPUs; cpus == 0 leaves it unlimited. It needs root and the controllers mounted as cgroup v1.
func NewGroup(name string, cpus float64, controllers ...string) (*Group, error) {
	mountinfo, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	own, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	g := &Group{Name: name, dirs: map[string]string{}}
	created := map[string]bool{}
	for _, ctrl := range controllers {
		parent, err := ownGroupDir(string(mountinfo), string(own), ctrl)
		if err != nil {
			g.Remove()
			return nil, err
		}
		dir := filepath.Join(parent, name)
		g.dirs[ctrl] = dir
		if created[dir] {
			continue // co-mounted with a controller already done
		}
		if err := os.Mkdir(dir, 0o755); err != nil {
			delete(g.dirs, ctrl)
			g.Remove()
			return nil, fmt.Errorf("creating %s (needs root): %w", dir, err)
		}
		created[dir] = true
	}
	if cpus > 0 {
		dir, ok := g.dirs["cpu"]
		if !ok {
			g.Remove()
			return nil, errors.New("a CPU quota needs the cpu controller")
		}
		quota := strconv.Itoa(int(cpus*period + 0.5))
		if err := writeFile(filepath.Join(dir, "cpu.cfs_period_us"), strconv.Itoa(period)); err != nil {
			g.Remove()
			return nil, err
		}
		if err := writeFile(filepath.Join(dir, "cpu.cfs_quota_us"), quota); err != nil {
			g.Remove()
			return nil, err
		}
	}
	return g, nil
}

// CheckCgroupV1 says why NewGroup cannot confine an app here in both the cpu and the cpuacct controllers: not
// root, or either controller not mounted as cgroup v1. nil when it can.
func CheckCgroupV1() error {
	if os.Geteuid() != 0 {
		return errors.New("needs root to create cgroups")
	}
	mountinfo, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	own, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return err
	}
	for _, c := range []string{"cpu", "cpuacct"} {
		if _, err := ownGroupDir(string(mountinfo), string(own), c); err != nil {
			return err
		}
	}
	return nil
}

// Dir is the group's directory in a controller's hierarchy, "" when the group is not in that controller.
func (g *Group) Dir(controller string) string { return g.dirs[controller] }

// Add moves a process (all its threads) into the group in every controller.
func (g *Group) Add(pid int) error {
	for _, dir := range g.dirs {
		if err := writeFile(filepath.Join(dir, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
			return err
		}
	}
	return nil
}

// Remove deletes the group's directories. The processes in it must have exited (and been waited for).
// Remove is idempotent.
func (g *Group) Remove() {
	for _, dir := range g.dirs {
		_ = os.Remove(dir)
	}
}

// RemoveStale deletes empty groups left by a driver that was killed before it could clean up: directories next
// to where NewGroup creates them, named prefix-PID or prefix-PID-anything, whose PID no longer runs.
func RemoveStale(prefix string, controllers ...string) {
	mountinfo, err1 := os.ReadFile("/proc/self/mountinfo")
	own, err2 := os.ReadFile("/proc/self/cgroup")
	if err1 != nil || err2 != nil {
		return
	}
	for _, ctrl := range controllers {
		parent, err := ownGroupDir(string(mountinfo), string(own), ctrl)
		if err != nil {
			continue
		}
		entries, _ := os.ReadDir(parent)
		for _, e := range entries {
			if pid, ok := stalePID(e.Name(), prefix); ok && e.IsDir() && !running(pid) {
				_ = os.Remove(filepath.Join(parent, e.Name())) // fails, harmlessly, on a group still in use
			}
		}
	}
}

// stalePID extracts PID from prefix-PID or prefix-PID-suffix.
func stalePID(name, prefix string) (int, bool) {
	rest, ok := strings.CutPrefix(name, prefix+"-")
	if !ok {
		return 0, false
	}
	digits, _, _ := strings.Cut(rest, "-")
	pid, err := strconv.Atoi(digits)
	return pid, err == nil && pid > 0
}

func running(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// ownGroupDir finds the directory of this process's group for a v1 controller, from the texts of
// /proc/self/mountinfo and /proc/self/cgroup.
func ownGroupDir(mountinfo, procCgroup, controller string) (string, error) {
	group := ""
	found := false
	for line := range strings.Lines(procCgroup) {
		// hierarchy-ID:controllers:path; v2 has an empty controller list.
		parts := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(parts) == 3 && hasItem(parts[1], controller) {
			group, found = parts[2], true
			break
		}
	}
	if !found {
		return "", fmt.Errorf("this process is in no cgroup v1 %s hierarchy (cgroup v2 is not supported here)", controller)
	}
	for line := range strings.Lines(mountinfo) {
		// id parent dev root mountpoint options [optional...] - fstype source superoptions
		pre, post, ok := strings.Cut(strings.TrimSpace(line), " - ")
		if !ok {
			continue
		}
		f, p := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(p) < 3 || p[0] != "cgroup" || !hasItem(p[2], controller) {
			continue
		}
		root, point := unoctal(f[3]), unoctal(f[4])
		rel, ok := strings.CutPrefix(group, root)
		if !ok || (rel != "" && root != "/" && !strings.HasPrefix(rel, "/")) {
			rel = "" // the group lies outside what is mounted (another namespace): use the mount's top
		}
		return filepath.Join(point, rel), nil
	}
	return "", fmt.Errorf("the cgroup v1 %s controller is not mounted", controller)
}

// hasItem reports whether a comma-separated list holds item.
func hasItem(list, item string) bool {
	for s := range strings.SplitSeq(list, ",") {
		if s == item {
			return true
		}
	}
	return false
}

// unoctal undoes mountinfo's \NNN escapes (\040 is a space).
func unoctal(s string) string {
	out, rest := "", s
	for {
		before, after, ok := strings.Cut(rest, `\`)
		if !ok || len(after) < 3 {
			return out + rest
		}
		if n, err := strconv.ParseUint(after[:3], 8, 8); err == nil {
			out, rest = out+before+string([]byte{byte(n)}), after[3:]
			continue
		}
		out, rest = out+before+`\`, after
	}
}

func writeFile(name, value string) error {
	if err := os.WriteFile(name, []byte(value), 0); err != nil {
		return fmt.Errorf("writing %q to %s: %w", value, name, err)
	}
	return nil
}
