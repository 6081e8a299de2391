package core

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Pressure is a Signal from Linux pressure stall information: the share of the last interval during which at
// least one task of the process's cgroup v2 group was runnable but waiting for a CPU ("some" in cpu.pressure).
// 1 means some task waited all the time.
//
// It is exact for a container whose group holds only the service. Where the process sits in the root group, or
// the group is not its own (a hybrid layout whose unified hierarchy holds no cpu controller, a systemd session),
// the file counts other processes too, and busy neighbours raise it: Reason says which file is read. It is
// therefore not part of DefaultSignal.
type Pressure struct {
	fs     hostFS
	file   string
	reason string
	now    func() time.Time

	mu     sync.Mutex
	primed bool
	prevUs uint64
	prevAt time.Time
}

// NewPressure finds the cpu.pressure file of the process's cgroup v2 group, else /proc/pressure/cpu. It returns
// an error when neither is readable (no PSI in the kernel, or psi=0 on its command line).
func NewPressure() (*Pressure, error) {
	return newPressure(hostFS{}, time.Now)
}

func newPressure(fs hostFS, now func() time.Time) (*Pressure, error) {
	var tried []string
	if cg, err := fs.read("/proc/self/cgroup"); err == nil {
		if mi, err := fs.read("/proc/self/mountinfo"); err == nil {
			if dir, _ := v2Dir(parseMountinfo(mi), parseProcCgroup(cg)); dir != "" {
				file := dir + "/cpu.pressure"
				_, err := readPressureSome(fs, file)
				if err == nil {
					return &Pressure{fs: fs, file: file, now: now,
						reason: "cgroup v2 group " + dir + ": counts every task of that group"}, nil
				}
				tried = append(tried, err.Error())
			}
		}
	}
	const system = "/proc/pressure/cpu"
	if _, err := readPressureSome(fs, system); err != nil {
		return nil, fmt.Errorf("loadshed: no CPU pressure information: %s", strings.Join(append(tried, err.Error()), "; "))
	}
	return &Pressure{fs: fs, file: system, now: now,
		reason: "system-wide " + system + ": counts every task of the machine"}, nil
}

// File is the pressure file read.
func (p *Pressure) File() string { return p.file }

// Reason says what the file counts.
func (p *Pressure) Reason() string { return p.reason }

// String describes the signal, for logs and Status.
func (p *Pressure) String() string { return "CPU pressure of " + p.file }

// Load returns the share of time since the previous call during which some task waited for a CPU. The first call
// only takes the baseline and returns 0.
func (p *Pressure) Load() (float64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	before := p.now() // an interval runs from before the previous read to after this one, as in CPU.Load
	us, err := readPressureSome(p.fs, p.file)
	if err != nil {
		return 0, err
	}
	if !p.primed {
		p.primed, p.prevUs, p.prevAt = true, us, before
		return 0, nil
	}
	load, err := pressureLoad(p.prevUs, us, p.now().Sub(p.prevAt))
	if err != nil {
		return 0, err
	}
	p.prevUs, p.prevAt = us, before
	return load, nil
}

// pressureLoad is the stalled share of elapsed wall time between two "some total" readings in microseconds.
func pressureLoad(prevUs, us uint64, elapsed time.Duration) (float64, error) {
	switch {
	case elapsed <= 0:
		return 0, errors.New("loadshed: no time elapsed between pressure readings")
	case us < prevUs:
		return 0, errors.New("loadshed: pressure total went backwards")
	}
	return float64(us-prevUs) / float64(elapsed.Microseconds()), nil
}

func readPressureSome(fs hostFS, file string) (uint64, error) {
	data, err := fs.read(file)
	if err != nil {
		return 0, err
	}
	return parsePressureSome(data)
}

// parsePressureSome reads the total of the "some" line of a PSI file ("some avg10=0.00 ... total=1234").
func parsePressureSome(data []byte) (uint64, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || fields[0] != "some" {
			continue
		}
		for _, f := range fields[1:] {
			if v, ok := strings.CutPrefix(f, "total="); ok {
				n, err := strconv.ParseUint(v, 10, 64)
				if err != nil {
					return 0, fmt.Errorf("pressure: bad total %q", v)
				}
				return n, nil
			}
		}
		return 0, errors.New("pressure: no total on the some line")
	}
	return 0, errors.New("pressure: no some line")
}
