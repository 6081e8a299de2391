// Command samplercost measures what loadshed's background sampler costs an otherwise idle service: the CPU time
// of a Fiber app with no middleware against the same app with a Shedder, each in a child process of its own, idle
// or serving a light load, over rounds that alternate the apps so that the machine's drift hits every one alike.
//
//	cd bench && go run ./cmd/samplercost -duration 20s -rounds 5
//	cd bench && go run ./cmd/samplercost -rate 20 -apps none,noop,default
//
// The CPU time is the sum of every thread's run time in /proc/PID/task/*/schedstat (nanoseconds), so it resolves
// far below the 10ms ticks of /proc/PID/stat. It prints one Markdown table: each app's median CPU as a share of
// one CPU, and its median difference from the app without a shedder in the same round.
package main

import (
	"flag"
	"fmt"
	"log"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	loadshedcore "github.com/fiberguard/fiberguard/loadshed/core"

	"github.com/fiberguard/fiberguard/bench/internal/scenario"
	"github.com/fiberguard/fiberguard/loadshed"
)

// apps are the compared apps, in table order.
var apps = []string{"none", "noop", "cpu", "default", "default-always"}

var appNames = map[string]string{
	"none":           "no shedder",
	"noop":           "Shedder, a signal that does nothing",
	"cpu":            "Shedder, CPU signal alone",
	"default":        "Shedder, default signal (CPU and scheduling latency)",
	"default-always": "Shedder, default signal, read every Interval (IdleInterval = Interval)",
}

func main() {
	serve := flag.String("serve", "", "internal: run the app ("+strings.Join(apps, "|")+") on -addr")
	addr := flag.String("addr", "", "internal: listen address of the app")
	duration := flag.Duration("duration", 20*time.Second, "length of each measurement")
	rounds := flag.Int("rounds", 5, "rounds; each measures every app once")
	rate := flag.Float64("rate", 0, "requests per second to GET /ok during each measurement (0: idle)")
	appList := flag.String("apps", strings.Join(apps, ","), "apps to compare: "+strings.Join(apps, ","))
	flag.Parse()

	if *serve != "" {
		if err := runApp(*serve, *addr); err != nil {
			log.Fatal(err)
		}
		return
	}
	list, err := scenario.ParseList(*appList, apps)
	if err != nil {
		log.Fatal(err)
	}
	if !slices.Contains(list, "none") {
		list = append([]string{"none"}, list...)
	}
	if err := drive(list, *rounds, *duration, *rate); err != nil {
		log.Fatal(err)
	}
}

func runApp(app, addr string) error {
	if err := scenario.AwaitStart(); err != nil {
		return err
	}
	var spec scenario.AppSpec
	cfg := loadshed.Config{DisableMetrics: true}
	switch app {
	case "none":
	case "noop":
		cfg.Signal = loadshedcore.SignalFunc(func() (float64, error) { return 0, nil })
	case "cpu":
		cfg.Signal = loadshedcore.NewCPU(0)
	case "default":
	case "default-always":
		cfg.IdleInterval = loadshed.ConfigDefault.Interval
	default:
		return fmt.Errorf("unknown app %q", app)
	}
	if app != "none" {
		s := loadshed.NewShedder(cfg)
		defer func() { _ = s.Close() }()
		spec.Middleware = s.Handler()
	}
	return scenario.NewApp(spec).Listen(addr)
}

func drive(list []string, rounds int, d time.Duration, rate float64) error {
	var clean scenario.Cleanup
	defer clean.OnInterrupt()()
	defer clean.Run()

	used := map[string][]float64{} // CPU per app and round, as a share of one CPU
	for round := range rounds {
		for _, app := range list {
			a, err := scenario.StartApp(scenario.AppOptions{Args: []string{"-serve", app}})
			if err != nil {
				return err
			}
			undo := clean.Add(a.Stop)
			time.Sleep(2 * time.Second) // past the start: the runtime's and the shedder's first work
			before, _, err := scenario.ThreadTimes(strconv.Itoa(a.Pid))
			if err != nil {
				return err
			}
			start := time.Now()
			if err := offer(a.Base+"/ok", rate, d); err != nil {
				return err
			}
			after, _, err := scenario.ThreadTimes(strconv.Itoa(a.Pid))
			if err != nil {
				return err
			}
			share := float64(after-before) / float64(time.Since(start))
			used[app] = append(used[app], share)
			log.Printf("round %d, %s: %.4f%% of a CPU", round+1, app, 100*share)
			a.Stop()
			undo()
		}
	}

	fmt.Printf("%d rounds of %v each, %s\n\n", rounds, d, load(rate))
	fmt.Printf("| app | CPU, median (min–max) | above the app without a shedder, median of the rounds' differences |\n")
	fmt.Printf("|---|---:|---:|\n")
	for _, app := range list {
		diffs := make([]float64, len(used[app]))
		for i, v := range used[app] {
			diffs[i] = v - used["none"][i]
		}
		above := fmt.Sprintf("%+.3f %%", 100*scenario.Median(diffs))
		if app == "none" {
			above = "–"
		}
		fmt.Printf("| %s | %.3f %% (%.3f–%.3f) | %s |\n", appNames[app], 100*scenario.Median(used[app]),
			100*slices.Min(used[app]), 100*slices.Max(used[app]), above)
	}
	return nil
}

func load(rate float64) string {
	if rate == 0 {
		return "idle (no request)"
	}
	return fmt.Sprintf("serving %.0f req/s of GET /ok", rate)
}

// offer sends GET url at rate per second for d, one request at a time, or waits d when rate is 0.
func offer(url string, rate float64, d time.Duration) error {
	if rate <= 0 {
		time.Sleep(d)
		return nil
	}
	client := &http.Client{Timeout: 5 * time.Second}
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	for end := time.Now().Add(d); time.Now().Before(end); <-tick.C {
		resp, err := client.Get(url)
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
	}
	return nil
}
