package scenario

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ThreadTimes sums, over every thread of a process ("self" or a pid), the time its threads ran on a CPU and the
// time they waited runnable for one: the first two fields of /proc/PID/task/*/schedstat, in nanoseconds. A
// thread that has exited is left out (and its times with it).
func ThreadTimes(pid string) (run, wait time.Duration, err error) {
	files, err := filepath.Glob("/proc/" + pid + "/task/*/schedstat")
	if err != nil || len(files) == 0 {
		return 0, 0, errors.Join(errors.New("no thread schedstat for pid "+pid), err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue // a thread that exited
		}
		fields := strings.Fields(string(data))
		if len(fields) < 2 {
			continue
		}
		r, err1 := strconv.ParseInt(fields[0], 10, 64)
		w, err2 := strconv.ParseInt(fields[1], 10, 64)
		if err := errors.Join(err1, err2); err != nil {
			return 0, 0, fmt.Errorf("%s: %w", f, err)
		}
		run, wait = run+time.Duration(r), wait+time.Duration(w)
	}
	return run, wait, nil
}
