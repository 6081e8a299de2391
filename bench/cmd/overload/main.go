// Command overload measures loadshed under a real overload: a CPU-bound Fiber app confined to one CPU by a cgroup,
// driven open-loop by vegeta from this (separate) process at a multiple of its capacity.
//
//	cd bench && go run ./cmd/overload -duration 30s -factor 2     # as root: it creates a cgroup
//
// It prints a Markdown table: capacity, then for the app with and without loadshed the goodput (200s per
// second), the shed fraction, and p50/p99 of admitted requests, next to the unloaded p50/p99.
package main

import (
	"bufio"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fiberguard/fiberguard/bench"
	"github.com/fiberguard/fiberguard/loadshed"
	"github.com/go-kratos/aegis/ratelimit/bbr"
	"github.com/gofiber/fiber/v2"
	vegeta "github.com/tsenart/vegeta/v12/lib"
)

func main() {
	serve := flag.String("serve", "", "internal: run the app (plain|loadshed|bbr) on -addr after reading a line on stdin")
	addr := flag.String("addr", "", "internal: listen address of the app")
	work := flag.Duration("work", time.Millisecond, "CPU time each request burns")
	duration := flag.Duration("duration", 30*time.Second, "length of each overload run")
	factor := flag.Float64("factor", 2, "offered load as a multiple of capacity")
	cpus := flag.Int("cpus", 1, "CPU quota of the app's cgroup")
	interval := flag.Duration("interval", 0, "loadshed Config.Interval (0: the default)")
	smoothing := flag.Float64("smoothing", 0, "loadshed Config.Smoothing (0: the default)")
	lower := flag.Float64("lower", 0, "loadshed Config.Lower (0: the default)")
	upper := flag.Float64("upper", 0, "loadshed Config.Upper (0: the default)")
	flag.Parse()

	if *serve != "" {
		runApp(*serve, *addr, loadshed.Config{Interval: *interval, Smoothing: *smoothing, Lower: *lower, Upper: *upper})
		return
	}
	if err := drive(*work, *duration, *factor, *cpus); err != nil {
		log.Fatal(err)
	}
}

// burn spends about d of CPU time hashing, like a handler that renders or computes.
func burn(iterations int) [32]byte {
	var sum [32]byte
	for i := 0; i < iterations; i++ {
		sum = sha256.Sum256(sum[:])
	}
	return sum
}

// calibrate finds how many hash iterations take d of CPU time on this machine.
func calibrate(d time.Duration) int {
	n := 10000
	start := time.Now()
	burn(n)
	per := time.Since(start) / time.Duration(n)
	if per <= 0 {
		per = time.Nanosecond
	}
	return int(d / per)
}

func runApp(mode, addr string, cfg loadshed.Config) {
	iterations, _ := strconv.Atoi(os.Getenv("OVERLOAD_ITERATIONS"))
	// The driver moves this process into the cgroup first, then says go.
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		log.Fatal(err)
	}
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Get("/healthz", func(c *fiber.Ctx) error { return c.SendString("ok") })
	if mode == "loadshed" {
		cfg.Next = func(c *fiber.Ctx) bool { return c.Path() == "/healthz" }
		s := loadshed.NewShedder(cfg)
		defer func() { _ = s.Close() }()
		app.Use(s.Handler())
		app.Get("/stats", func(c *fiber.Ctx) error { return c.JSON(s.Stats()) })
	}
	if mode == "bbr" {
		app.Use(bench.BBRMiddleware(bbr.NewLimiter()))
	}
	app.Get("/work", func(c *fiber.Ctx) error {
		sum := burn(iterations)
		return c.Send(sum[:4])
	})
	if err := app.Listen(addr); err != nil {
		log.Print(err) // the driver kills this process; a listen error shows in its log
	}
}

// cgroup is a v1 cpu+cpuacct group with a CPU quota.
type cgroup struct{ dirs []string }

func newCgroup(cpus int) (*cgroup, error) {
	name := fmt.Sprintf("fiberguard-overload-%d", os.Getpid())
	cg := &cgroup{}
	for _, ctrl := range []string{"cpu", "cpuacct"} {
		dir := filepath.Join("/sys/fs/cgroup", ctrl, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			cg.remove()
			return nil, fmt.Errorf("creating %s (needs root and cgroup v1): %w", dir, err)
		}
		cg.dirs = append(cg.dirs, dir)
	}
	if err := os.WriteFile(filepath.Join(cg.dirs[0], "cpu.cfs_period_us"), []byte("100000"), 0); err != nil {
		return nil, err
	}
	return cg, os.WriteFile(filepath.Join(cg.dirs[0], "cpu.cfs_quota_us"), []byte(strconv.Itoa(cpus*100000)), 0)
}

func (cg *cgroup) add(pid int) error {
	for _, d := range cg.dirs {
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			return err
		}
	}
	return nil
}

func (cg *cgroup) remove() {
	for _, d := range cg.dirs {
		_ = os.Remove(d)
	}
}

type app struct {
	cmd  *exec.Cmd
	base string
}

func startApp(cg *cgroup, mode string, iterations int) (*app, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	_ = l.Close()
	args := []string{"-serve", mode, "-addr", addr}
	for _, f := range []string{"interval", "smoothing", "lower", "upper"} {
		args = append(args, "-"+f, flag.Lookup(f).Value.String())
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "OVERLOAD_ITERATIONS="+strconv.Itoa(iterations))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	a := &app{cmd: cmd, base: "http://" + addr}
	if err := cg.add(cmd.Process.Pid); err != nil {
		a.stop()
		return nil, err
	}
	_, _ = stdin.Write([]byte("go\n"))
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get(a.base + "/healthz"); err == nil {
			resp.Body.Close()
			return a, nil
		}
	}
	a.stop()
	return nil, errors.New("app did not start")
}

func (a *app) stop() {
	_ = a.cmd.Process.Kill()
	_ = a.cmd.Wait()
}

// capacity measures the app's throughput with a closed loop of concurrent clients.
func capacity(base string, d time.Duration) float64 {
	var n atomic.Int64
	var wg sync.WaitGroup
	stop := time.Now().Add(d)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				resp, err := client.Get(base + "/work")
				if err != nil {
					continue
				}
				resp.Body.Close()
				if resp.StatusCode == 200 {
					n.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return float64(n.Load()) / d.Seconds()
}

type outcome struct {
	offered, goodput, shedFrac, errFrac float64
	p50, p99                            time.Duration
}

// attack drives base/work open-loop at rate for d and summarises the results.
func attack(base string, rate float64, d time.Duration) outcome {
	atk := vegeta.NewAttacker(vegeta.Timeout(10*time.Second), vegeta.Workers(64), vegeta.MaxWorkers(20000),
		vegeta.KeepAlive(true), vegeta.Connections(20000))
	tr := vegeta.NewStaticTargeter(vegeta.Target{Method: "GET", URL: base + "/work"})
	var ok []time.Duration
	total, shed, failed, inWindow := 0, 0, 0, 0
	end := time.Now().Add(d)
	for res := range atk.Attack(tr, vegeta.ConstantPacer{Freq: int(rate), Per: time.Second}, d, "overload") {
		total++
		switch res.Code {
		case 200:
			ok = append(ok, res.Latency)
			if !res.End().After(end) {
				inWindow++ // goodput counts work finished while the load was offered, not the backlog after it
			}
		case 503:
			shed++
		default:
			failed++
		}
	}
	slices.Sort(ok)
	o := outcome{offered: rate, goodput: float64(inWindow) / d.Seconds()}
	if total > 0 {
		o.shedFrac, o.errFrac = float64(shed)/float64(total), float64(failed)/float64(total)
	}
	if len(ok) > 0 {
		o.p50, o.p99 = ok[len(ok)/2], ok[len(ok)*99/100]
	}
	return o
}

func drive(work, duration time.Duration, factor float64, cpus int) error {
	cg, err := newCgroup(cpus)
	if err != nil {
		return err
	}
	defer cg.remove()
	iterations := calibrate(work)
	log.Printf("calibrated %d hash iterations for %v of CPU per request", iterations, work)

	run := func(mode string, f func(base string) outcome) (outcome, error) {
		a, err := startApp(cg, mode, iterations)
		if err != nil {
			return outcome{}, err
		}
		defer a.stop()
		time.Sleep(time.Second) // let the sampler settle on an idle app
		return f(a.base), nil
	}

	var capRPS float64
	if _, err := run("plain", func(base string) outcome { capRPS = capacity(base, 5*time.Second); return outcome{} }); err != nil {
		return err
	}
	log.Printf("capacity %.0f req/s", capRPS)
	unloaded, err := run("loadshed", func(base string) outcome { return attack(base, capRPS/4, 10*time.Second) })
	if err != nil {
		return err
	}
	log.Printf("unloaded: %+v", unloaded)
	moderate, err := run("loadshed", func(base string) outcome { return attack(base, capRPS*0.8, 10*time.Second) })
	if err != nil {
		return err
	}
	log.Printf("moderate: %+v", moderate)
	rate := capRPS * factor
	plain, err := run("plain", func(base string) outcome { return attack(base, rate, duration) })
	if err != nil {
		return err
	}
	log.Printf("plain: %+v", plain)
	shed, err := run("loadshed", func(base string) outcome { return attack(base, rate, duration) })
	if err != nil {
		return err
	}
	log.Printf("loadshed: %+v", shed)
	bbrOut, err := run("bbr", func(base string) outcome { return attack(base, rate, duration) })
	if err != nil {
		return err
	}
	log.Printf("aegis bbr: %+v", bbrOut)

	fmt.Printf("Capacity (closed loop, 16 clients, %d CPU cgroup, %v CPU per request): **%.0f req/s**\n\n", cpus, work, capRPS)
	fmt.Printf("| run | offered req/s | goodput req/s | goodput / capacity | shed | errors | p50 admitted | p99 admitted |\n")
	fmt.Printf("|---|---:|---:|---:|---:|---:|---:|---:|\n")
	row := func(name string, o outcome) {
		fmt.Printf("| %s | %.0f | %.0f | %.0f%% | %.1f%% | %.1f%% | %s | %s |\n", name, o.offered, o.goodput,
			100*o.goodput/capRPS, 100*o.shedFrac, 100*o.errFrac, ms(o.p50), ms(o.p99))
	}
	row("unloaded (¼ capacity, loadshed on)", unloaded)
	row("0.8x capacity, loadshed on", moderate)
	row(fmt.Sprintf("%.3gx capacity, no shedding", factor), plain)
	row(fmt.Sprintf("%.3gx capacity, loadshed", factor), shed)
	row(fmt.Sprintf("%.3gx capacity, go-kratos/aegis BBR (defaults)", factor), bbrOut)
	fmt.Printf("\nadmitted p99 / unloaded p99 with loadshed: %.1fx; without: %.1fx\n",
		float64(shed.p99)/float64(unloaded.p99), float64(plain.p99)/float64(unloaded.p99))
	return nil
}

func ms(d time.Duration) string {
	return strings.TrimSuffix(strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64), ".0") + " ms"
}
