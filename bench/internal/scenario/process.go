package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// App is the scenario's Fiber app, running in a child process: the driver's own binary re-executed with the
// app's flags. It waits on stdin until the driver has placed it in its groups.
type App struct {
	Base string // http://127.0.0.1:PORT
	Pid  int

	cmd      *exec.Cmd
	stopOnce sync.Once
}

// AppOptions says where and how the app runs.
type AppOptions struct {
	Args   []string // the app's flags; StartApp appends -addr
	Env    []string // added to the driver's environment
	Groups []*Group // joined before the app starts serving; none: the app stays in the driver's groups
	Nice   int      // niceness of the app's threads, set whatever the driver's own (children inherit it)
}

// StartApp starts the app, moves it into its groups, sets its niceness, tells it to serve and waits until it
// answers GET /healthz.
func StartApp(o AppOptions) (*App, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, append(append([]string{}, o.Args...), "-addr", addr)...)
	cmd.Env = append(os.Environ(), o.Env...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive a driver killed hard
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	a := &App{Base: "http://" + addr, Pid: cmd.Process.Pid, cmd: cmd}
	for _, g := range o.Groups {
		if err := g.Add(a.Pid); err != nil {
			a.Stop()
			return nil, err
		}
	}
	if err := SetNice(a.Pid, o.Nice); err != nil {
		a.Stop()
		return nil, err
	}
	if _, err := io.WriteString(stdin, "go\n"); err != nil {
		a.Stop()
		return nil, err
	}
	client := &http.Client{Timeout: time.Second}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if resp, err := client.Get(a.Base + "/healthz"); err == nil {
			resp.Body.Close()
			return a, nil
		}
	}
	a.Stop()
	return nil, errors.New("app did not start")
}

// Stop kills the app and waits for it. Stop is idempotent.
func (a *App) Stop() {
	a.stopOnce.Do(func() {
		_ = a.cmd.Process.Kill()
		_ = a.cmd.Wait()
	})
}

// GetJSON decodes the JSON answer of GET path.
func (a *App) GetJSON(path string, v any) error {
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(a.Base + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// CPUTime is the user+system CPU time the app's threads have used so far.
func (a *App) CPUTime() (time.Duration, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(a.Pid) + "/stat")
	if err != nil {
		return 0, err
	}
	return parseStatCPU(data)
}

// CPUDuring runs f and returns the CPU time the app used meanwhile and f's wall time.
func (a *App) CPUDuring(f func()) (cpu, wall time.Duration, err error) {
	before, err := a.CPUTime()
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	f()
	wall = time.Since(start)
	after, err := a.CPUTime()
	if err != nil {
		return 0, 0, err
	}
	return after - before, wall, nil
}

// Cgroups returns the app's group per v1 controller, from /proc/PID/cgroup.
func (a *App) Cgroups() (map[string]string, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(a.Pid) + "/cgroup")
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for line := range strings.Lines(string(data)) {
		parts := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(parts) != 3 {
			continue
		}
		for c := range strings.SplitSeq(parts[1], ",") {
			out[c] = parts[2]
		}
	}
	return out, nil
}

// userHZ is the unit of the CPU times in /proc/PID/stat: USER_HZ, 100 on every Linux architecture Go supports
// except alpha and ia64.
const userHZ = 100

// parseStatCPU reads utime + stime from a /proc/PID/stat line. The command name (field 2) is in parentheses and
// may hold spaces and parentheses, so fields are counted from the last ')'.
func parseStatCPU(data []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, errors.New("malformed /proc/PID/stat")
	}
	f := strings.Fields(string(data[i+1:]))
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, errors.New("malformed /proc/PID/stat: too few fields")
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("malformed /proc/PID/stat: %w", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}

// SetNice sets the niceness of every thread of a process. Linux keeps niceness per thread and a new thread
// inherits its creator's, so the threads are set until a pass finds no new one.
func SetNice(pid, nice int) error {
	done := map[int]bool{}
	for {
		entries, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
		if err != nil {
			return err
		}
		fresh := 0
		for _, e := range entries {
			tid, err := strconv.Atoi(e.Name())
			if err != nil || done[tid] {
				continue
			}
			if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, nice); err != nil && !errors.Is(err, syscall.ESRCH) {
				return fmt.Errorf("setting niceness %d of thread %d: %w", nice, tid, err)
			}
			done[tid] = true
			fresh++
		}
		if fresh == 0 {
			return nil
		}
	}
}

// Neighbours are busy-loop shell processes, outside the app's groups (in the driver's), taking CPU from it.
type Neighbours struct {
	cmds     []*exec.Cmd
	stopOnce sync.Once
}

// StartNeighbours starts n busy loops at a niceness.
func StartNeighbours(n, nice int) (*Neighbours, error) {
	nb := &Neighbours{}
	for range n {
		cmd := exec.Command("sh", "-c", "while :; do :; done")
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			nb.Stop()
			return nil, err
		}
		nb.cmds = append(nb.cmds, cmd)
		if err := SetNice(cmd.Process.Pid, nice); err != nil {
			nb.Stop()
			return nil, err
		}
	}
	return nb, nil
}

// Stop kills the neighbours and waits for them. Stop is idempotent.
func (nb *Neighbours) Stop() {
	nb.stopOnce.Do(func() {
		for _, c := range nb.cmds {
			_ = c.Process.Kill()
		}
		for _, c := range nb.cmds {
			_ = c.Wait()
		}
	})
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// HostBusy is the CPU time the whole host has spent busy (neither idle nor waiting for I/O) since boot, from
// /proc/stat: to check that a "quiet host" was quiet.
func HostBusy() (time.Duration, error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	return parseHostBusy(data)
}

// parseHostBusy reads the first line of /proc/stat: "cpu user nice system idle iowait irq softirq steal ...".
// guest and guest_nice are already counted in user and nice.
func parseHostBusy(data []byte) (time.Duration, error) {
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, errors.New("malformed /proc/stat")
	}
	var busy int64
	for i, s := range f[1:9] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("malformed /proc/stat: %w", err)
		}
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return time.Duration(busy) * time.Second / userHZ, nil
}
