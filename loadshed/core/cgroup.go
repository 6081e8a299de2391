package core

import (
	"bufio"
	"bytes"
	"errors"
	"math"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// hostFS reads files of the machine, optionally below a root directory (fixture trees in tests).
type hostFS struct{ root string }

func (h hostFS) read(name string) ([]byte, error) {
	return os.ReadFile(filepath.Join(h.root, filepath.FromSlash(name)))
}

// mount is one line of /proc/self/mountinfo that matters to cgroups.
type mount struct {
	root   string // the part of the hierarchy mounted here ("/" or, in containers, often the group itself)
	point  string // where it is mounted
	fstype string // "cgroup" (v1) or "cgroup2"
	opts   []string
}

// parseMountinfo returns the cgroup and cgroup2 mounts of a /proc/self/mountinfo.
func parseMountinfo(data []byte) []mount {
	var out []mount
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		// 36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, f := range fields {
			if f == "-" {
				sep = i
				break
			}
		}
		if sep < 5 || sep+3 > len(fields) {
			continue
		}
		fstype := fields[sep+1]
		if fstype != "cgroup" && fstype != "cgroup2" {
			continue
		}
		out = append(out, mount{
			root:   unescapeMount(fields[3]),
			point:  unescapeMount(fields[4]),
			fstype: fstype,
			opts:   strings.Split(fields[sep+3], ","),
		})
	}
	return out
}

// unescapeMount undoes the octal escapes (\040 for a space) of mountinfo paths.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// procCgroups is /proc/self/cgroup: the group of each v1 controller and the v2 (unified) group.
type procCgroups struct {
	v1       map[string]string // controller → group path
	v2       string            // group path in the unified hierarchy
	hasV2    bool
	hasAnyV1 bool
}

func parseProcCgroup(data []byte) procCgroups {
	pc := procCgroups{v1: map[string]string{}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		// hierarchy-ID:controller-list:cgroup-path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			pc.v2, pc.hasV2 = parts[2], true
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c != "" {
				pc.v1[c] = parts[2]
				pc.hasAnyV1 = true
			}
		}
	}
	return pc
}

// v1Dir returns the directory of the process's group for a v1 controller and the mount point above it, or ""
// when the controller is not mounted.
func v1Dir(mounts []mount, pc procCgroups, controller string) (dir, top string) {
	group, ok := pc.v1[controller]
	if !ok {
		return "", ""
	}
	for _, m := range mounts {
		if m.fstype != "cgroup" || !hasOpt(m.opts, controller) {
			continue
		}
		if dir, ok := groupDir(m, group); ok {
			return dir, m.point
		}
	}
	return "", ""
}

// v2Dir returns the directory of the process's unified group and the mount point above it, or "" when cgroup2
// is not mounted.
func v2Dir(mounts []mount, pc procCgroups) (dir, top string) {
	if !pc.hasV2 {
		return "", ""
	}
	for _, m := range mounts {
		if m.fstype != "cgroup2" {
			continue
		}
		if dir, ok := groupDir(m, pc.v2); ok {
			return dir, m.point
		}
	}
	return "", ""
}

// groupLimit returns the tightest CPU limit of a group and its ancestors up to the mount point, and the
// directory that sets it: a limit on a parent (a Kubernetes pod, a systemd slice) binds its children too. The
// group's own limit must be readable; an ancestor's may be missing (the root holds none).
func groupLimit(dir, top string, read func(dir string) (float64, error)) (float64, string, error) {
	best, where := math.Inf(1), ""
	q, err := read(dir)
	switch {
	case err == nil:
		best, where = q, dir
	case !errors.Is(err, errUnlimited):
		return 0, "", err
	}
	for d := dir; d != top && len(d) > len(top); {
		d = path.Dir(d)
		if q, err := read(d); err == nil && q < best {
			best, where = q, d
		}
	}
	if where == "" {
		return 0, "", errUnlimited
	}
	return best, where, nil
}

// groupDir maps a group path to a directory below a mount whose root is part of the hierarchy: a container that
// mounts its own group as the root sees /proc/self/cgroup paths below that root.
func groupDir(m mount, group string) (string, bool) {
	rel, ok := strings.CutPrefix(path.Clean(group), path.Clean(m.root))
	if !ok || (rel != "" && !strings.HasPrefix(rel, "/") && m.root != "/") {
		return "", false
	}
	return path.Join(m.point, rel), true
}

func hasOpt(opts []string, want string) bool {
	for _, o := range opts {
		if o == want {
			return true
		}
	}
	return false
}
