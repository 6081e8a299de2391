package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fiberguard/fiberguard/e2e/internal/gatewayproc"
)

// firstStatus is the part of the gateway's /status the first-five-minutes script speaks of.
type firstStatus struct {
	Loadshed struct {
		Rejected uint64 `json:"rejected"`
	} `json:"loadshed"`
	Throttle struct {
		Rejected uint64 `json:"rejected"`
	} `json:"throttle"`
	Upstreampick struct {
		Upstreams []struct {
			Server     string  `json:"server"`
			RTTSeconds float64 `json:"rtt_seconds"`
			Sampled    bool    `json:"sampled"`
			Tier       int     `json:"tier"`
			Healthy    bool    `json:"healthy"`
			Picks      uint64  `json:"picks"`
		} `json:"upstreams"`
	} `json:"upstreampick"`
	Rebalance struct {
		Enabled bool `json:"enabled"`
	} `json:"rebalance"`
}

// fetchPage fetches base+path and returns the answer's status, headers and body.
func fetchPage(t *testing.T, base, path string) (int, http.Header, string) {
	t.Helper()
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(base + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(body)
}

func readStatus(t *testing.T, base string) firstStatus {
	t.Helper()
	code, _, body := fetchPage(t, base, "/status")
	var st firstStatus
	if err := json.Unmarshal([]byte(body), &st); code != 200 || err != nil {
		t.Fatalf("/status: %d %v\n%s", code, err, body)
	}
	return st
}

// summaryTable reads the summary table `load` prints at the end: route → column → cell.
func summaryTable(t *testing.T, out string) map[string]map[string]string {
	t.Helper()
	_, rest, ok := strings.Cut(out, "\nsummary: ")
	if !ok {
		t.Fatalf("load printed no summary:\n%s", out)
	}
	cells := regexp.MustCompile(`\s{2,}`)
	lines := strings.Split(rest, "\n")
	var header []string
	table := map[string]map[string]string{}
	for _, l := range lines[1:] {
		if strings.TrimSpace(l) == "" {
			break
		}
		row := cells.Split(strings.TrimSpace(l), -1)
		if header == nil {
			header = row
			continue
		}
		table[row[0]] = map[string]string{}
		for i, c := range row {
			if i < len(header) {
				table[row[0]][header[i]] = c
			}
		}
	}
	return table
}

// count is the number at the start of a summary cell ("608 (5%)" → 608).
func count(t *testing.T, cell string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.Fields(cell + " x")[0])
	if err != nil {
		t.Fatalf("summary cell %q is not a count", cell)
	}
	return n
}

// TestFirstFiveMinutes follows the script of examples/README.md ("Your first five minutes"): start the gateway,
// open the page, drive it with `go run ./examples/load` (its defaults: 20 s), and look. It checks what the script
// promises: the start-up line in words, the page and /status, every route answering, the proxied requests
// going to the near upstreams only, the throttle column, /burn served steadily with its excess shed, and every
// rejection labelled by its module.
func TestFirstFiveMinutes(t *testing.T) {
	// 1. Start.
	g := gatewayproc.Start(t)
	log := g.Log()
	if i, j := strings.Index(log, "loadshed: sheds the share of requests"), strings.Index(log, "fiberguard gateway on http://"); i < 0 || j < i {
		t.Errorf("the start-up lines do not say first, in words, what loadshed does:\n%s", log)
	}

	// 2. The page, /status and the routes.
	if code, h, body := fetchPage(t, g.URL, "/"); code != 200 || !strings.HasPrefix(h.Get("Content-Type"), "text/html") ||
		!strings.Contains(body, "fiberguard gateway") {
		t.Fatalf("GET /: %d %s", code, h.Get("Content-Type"))
	}
	var st firstStatus
	deadline := time.Now().Add(20 * time.Second)
	for {
		st = readStatus(t, g.URL)
		// Exactly one out of the nearest tier: on a busy machine a near one can stray past its limit a moment.
		sampled, far := len(st.Upstreampick.Upstreams) == 3, 0
		for _, u := range st.Upstreampick.Upstreams {
			sampled = sampled && u.Sampled
			if u.Tier > 0 {
				far++
			}
		}
		if sampled && far == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the three demo upstreams are not measured and tiered after 20 s: %+v", st.Upstreampick)
		}
		time.Sleep(100 * time.Millisecond)
	}
	far := ""
	for _, u := range st.Upstreampick.Upstreams {
		switch {
		case u.Tier == 0 && u.RTTSeconds < 0.005:
		case u.Tier > 0 && far == "":
			far = u.Server
		default:
			t.Errorf("upstream %+v: want two near ones in tier 0 and a far one in a tier of its own", u)
		}
	}
	if st.Rebalance.Enabled {
		t.Error("rebalance is on without a Prometheus")
	}
	if code, _, body := fetchPage(t, g.URL, "/proxy/hello"); code != 200 ||
		!strings.HasPrefix(body, "site-a ") && !strings.HasPrefix(body, "site-b ") {
		t.Errorf("/proxy/hello: %d %q, want site-a or site-b", code, body)
	}
	if code, _, body := fetchPage(t, g.URL, "/throttled?ms=20"); code != 200 {
		t.Errorf("/throttled?ms=20: %d %q", code, body)
	}
	if code, h, body := fetchPage(t, g.URL, "/burn?ms=5"); code != 200 && h.Get("Fiberguard-Rejected-By") != "loadshed/default" {
		t.Errorf("/burn?ms=5: %d %q", code, body)
	}

	// 3. The load, as the script runs it.
	out, errOut, code := g.Load(t, 2*time.Minute)
	if code != 0 {
		t.Fatalf("load exited %d:\n%s\n%s", code, out, errOut)
	}
	table := summaryTable(t, out)
	for _, route := range []string{"/burn?ms=5", "/throttled?ms=20", "/proxy/hello"} {
		row, ok := table[route]
		if !ok {
			t.Fatalf("the summary has no row for %s:\n%s", route, out)
		}
		// Every rejection is a module's, labelled: none without Fiberguard-Rejected-By, no other status, no error.
		for _, col := range []string{"503 other", "other", "errors"} {
			if count(t, row[col]) != 0 {
				t.Errorf("%s: %s = %s, want 0\n%s", route, col, row[col], out)
			}
		}
	}
	if row := table["/proxy/hello"]; count(t, row["sent"]) == 0 || row["200"] != row["sent"]+" (100%)" {
		t.Errorf("/proxy/hello: %s of %s sent answered 200, want all\n%s", row["200"], row["sent"], out)
	}
	if row := table["/throttled?ms=20"]; count(t, row["throttle"]) == 0 || count(t, row["200"]) == 0 {
		t.Errorf("/throttled?ms=20: throttle %s, 200 %s; want both above 0\n%s", row["throttle"], row["200"], out)
	}
	if row := table["/burn?ms=5"]; count(t, row["loadshed"]) == 0 {
		t.Errorf("/burn?ms=5 at 1.5 times the CPUs: no rejection in the loadshed column\n%s", out)
	}
	// What the script promises of /burn: a steady rate, the excess in the loadshed column. It is served every
	// second after the first, and at least a third of what the CPUs serve in all (a shedder that sheds while the
	// CPUs sit idle serves a few per cent; on a quiet 2-CPU machine the gateway serves about 0.8 of it, beside the
	// load generator).
	if served, nominal := count(t, table["/burn?ms=5"]["200"]), float64(runtime.NumCPU())/0.005*20; float64(served) < nominal/3 {
		t.Errorf("/burn?ms=5: %d served in 20 s, want at least a third of the %.0f the CPUs serve\n%s", served, nominal, out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, " route=/burn?ms=5 ") && !strings.HasPrefix(line, "t=1.0s ") && strings.Contains(line, " ok=0 ") {
			t.Errorf("/burn?ms=5: a second with no request served after the first: %s", line)
		}
	}

	// 4. What the page and /status show afterwards.
	st = readStatus(t, g.URL)
	var near uint64
	for _, u := range st.Upstreampick.Upstreams {
		if u.Server == far {
			// By now its connect-time average has climbed to the 20 ms its dial waits.
			if u.Picks != 0 || u.Tier == 0 || u.RTTSeconds < 0.018 {
				t.Errorf("the far upstream %+v: want no pick, in a tier of its own, about 20 ms away", u)
			}
			continue
		}
		near += u.Picks
	}
	if sent := count(t, table["/proxy/hello"]["sent"]); near < uint64(sent) {
		t.Errorf("the near upstreams were picked %d times for %d proxied requests", near, sent)
	}
	if st.Throttle.Rejected == 0 || st.Loadshed.Rejected == 0 {
		t.Errorf("/status: throttle rejected %d, loadshed rejected %d; want both above 0", st.Throttle.Rejected,
			st.Loadshed.Rejected)
	}
	var data struct {
		Samples []json.RawMessage `json:"samples"`
	}
	if code, _, body := fetchPage(t, g.URL, "/live/data"); code != 200 || json.Unmarshal([]byte(body), &data) != nil ||
		len(data.Samples) < 40 {
		t.Errorf("/live/data: %d, %d samples; want the run's 20 s at two a second", code, len(data.Samples))
	}
	if i := strings.Index(out, "\nsummary: "); i >= 0 {
		t.Logf("summary:\n%s", out[i:])
	}
}
