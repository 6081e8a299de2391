package main

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
)

// The live page polls GET /live/data about twice a second and draws what the sampler kept.
const (
	// liveInterval is how often the sampler reads every feature's status.
	liveInterval = 500 * time.Millisecond
	// liveCapacity is how many samples the ring keeps: 3 minutes at liveInterval.
	liveCapacity = 360
	// liveMaxSampleBytes caps one sample, so the ring holds at most liveCapacity × liveMaxSampleBytes (22.5 MiB);
	// a sample is 1–3 KiB in practice. Each feature gets an equal share; a status over its share is replaced by
	// an error that says so.
	liveMaxSampleBytes = 64 << 10
)

// live keeps the newest samples of every feature's status, each marshalled once when taken, and serves them
// to the live page. Its zero value is not usable; see newLive.
type live struct {
	every    time.Duration
	capacity int

	mu   sync.RWMutex
	ring [][]byte // ring[(head+i)%capacity] is the i-th oldest sample's JSON
	head int
	n    int
	last uint64 // seq of the newest sample; 0 before the first

	// Set by newLive, then only read.
	names   []string
	sources []func() any

	stopOnce sync.Once
	stop     chan struct{}
	done     chan struct{}
}

// newLive returns a live view of sources (a feature's name and its status) that samples every interval and
// keeps the newest capacity samples. It copies the set of sources; each status func is called at every sample.
func newLive(sources map[string]func() any, every time.Duration, capacity int) *live {
	if every <= 0 || capacity <= 0 {
		panic(fmt.Sprintf("gateway: live sampling needs a positive interval and capacity, got %v and %d", every, capacity))
	}
	l := &live{every: every, capacity: capacity, ring: make([][]byte, capacity)}
	for name := range sources {
		l.names = append(l.names, name)
	}
	slices.Sort(l.names)
	for _, name := range l.names {
		l.sources = append(l.sources, sources[name])
	}
	return l
}

// start takes a sample now and then every interval in a goroutine, until the returned stop is called; stop
// waits for the goroutine and may be called more than once. start may be called once.
func (l *live) start() (stop func()) {
	l.stop, l.done = make(chan struct{}), make(chan struct{})
	go l.run()
	return func() {
		l.stopOnce.Do(func() { close(l.stop) })
		<-l.done
	}
}

func (l *live) run() {
	defer close(l.done)
	t := time.NewTicker(l.every)
	defer t.Stop()
	for {
		l.record(time.Now())
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
	}
}

// record takes one sample of every source, stamped now, and adds it to the ring, evicting the oldest when full.
// Only one goroutine may record.
func (l *live) record(now time.Time) {
	seq := l.lastSeq() + 1
	b := make([]byte, 0, 2048)
	b = append(b, `{"seq":`...)
	b = strconv.AppendUint(b, seq, 10)
	b = append(b, `,"time":"`...)
	b = now.UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z07:00")
	b = append(b, `","status":{`...)
	share := 0
	if len(l.names) > 0 {
		share = (liveMaxSampleBytes - len(b) - 64) / len(l.names)
	}
	for i, name := range l.names {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, name)
		b = append(b, ':')
		b = append(b, statusJSON(l.sources[i], share-len(name)-4)...)
	}
	b = append(b, "}}"...)

	l.mu.Lock()
	if l.n < l.capacity {
		l.ring[(l.head+l.n)%l.capacity] = b
		l.n++
	} else {
		l.ring[l.head] = b
		l.head = (l.head + 1) % l.capacity
	}
	l.last = seq
	l.mu.Unlock()
}

func (l *live) lastSeq() uint64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.last
}

// statusJSON marshals one feature's status. A status that cannot be marshalled, panics, or is over limit bytes
// becomes {"error": why}, so one feature never spoils the others' part of a sample.
func statusJSON(status func() any, limit int) (b []byte) {
	defer func() {
		if p := recover(); p != nil {
			b = liveError(fmt.Sprintf("status panicked: %v", p))
		}
	}()
	b, err := json.Marshal(status())
	switch {
	case err != nil:
		return liveError("status does not marshal: " + err.Error())
	case len(b) > limit:
		return liveError(fmt.Sprintf("status is %d bytes, over the %d a sample has room for", len(b), limit))
	}
	return b
}

func liveError(why string) []byte {
	b, _ := json.Marshal(struct {
		Error string `json:"error"`
	}{why})
	return b
}

// liveDataPrefix starts every /live/data answer; the page reads the interval and capacity from it.
var liveDataPrefix = fmt.Sprintf(`{"interval_seconds":%g,"capacity":%d,"last":`, liveInterval.Seconds(), liveCapacity)

// serveData answers GET /live/data?since=SEQ with the samples after SEQ, oldest first (all the ring holds when
// since is absent), and the newest seq as "last": a page that sees last go down knows the gateway restarted.
// It copies the pre-marshalled samples into the response; nothing is marshalled per request.
func (l *live) serveData(c *fiber.Ctx) error {
	since, ok := parseSince(c)
	if !ok {
		return c.Status(fiber.StatusBadRequest).SendString("since must be a sample's seq: an integer >= 0\n")
	}
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
	c.Set(fiber.HeaderCacheControl, "no-store")
	resp := c.Response()
	resp.AppendBodyString(liveDataPrefix)

	l.mu.RLock()
	defer l.mu.RUnlock()
	var num [20]byte
	resp.AppendBody(strconv.AppendUint(num[:0], l.last, 10))
	resp.AppendBodyString(`,"samples":[`)
	// The ring holds the consecutive seqs last-n+1 .. last.
	skip := 0
	if oldest := l.last - uint64(l.n) + 1; since >= oldest {
		skip = int(min(since-oldest+1, uint64(l.n)))
	}
	for i := skip; i < l.n; i++ {
		if i > skip {
			resp.AppendBodyString(",")
		}
		resp.AppendBody(l.ring[(l.head+i)%l.capacity])
	}
	resp.AppendBodyString("]}")
	return nil
}

// parseSince reads the since query argument: absent means 0 (every sample); anything but a decimal integer >= 0
// is not ok.
func parseSince(c *fiber.Ctx) (uint64, bool) {
	args := c.Context().QueryArgs()
	if !args.Has("since") {
		return 0, true
	}
	v, err := strconv.ParseUint(c.Query("since"), 10, 64) // Query's string shares the request's bytes: no copy
	return v, err == nil
}

//go:embed ui
var uiFiles embed.FS

// uiAsset is one embedded file of the page, read once.
type uiAsset struct {
	body        []byte
	contentType string
}

var uiAssets = sync.OnceValue(func() map[string]uiAsset {
	assets := map[string]uiAsset{}
	err := fs.WalkDir(uiFiles, "ui", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := uiFiles.ReadFile(p)
		if err != nil {
			return err
		}
		assets[p[len("ui/"):]] = uiAsset{body: body, contentType: uiContentType(p)}
		return nil
	})
	if err != nil {
		panic("gateway: reading the embedded page: " + err.Error()) // the build embedded it; cannot happen
	}
	return assets
})

func uiContentType(p string) string {
	switch path.Ext(p) {
	case ".html":
		return fiber.MIMETextHTMLCharsetUTF8
	case ".js":
		return fiber.MIMETextJavaScriptCharsetUTF8
	case ".css":
		return "text/css; charset=utf-8"
	}
	return fiber.MIMETextPlainCharsetUTF8
}

func serveAsset(c *fiber.Ctx, name string) error {
	a, ok := uiAssets()[name]
	if !ok {
		return fiber.ErrNotFound
	}
	c.Set(fiber.HeaderContentType, a.contentType)
	// The assets change only with the binary; revalidating is cheap on loopback and never shows a stale page.
	c.Set(fiber.HeaderCacheControl, "no-cache")
	return c.Send(a.body)
}

// mount adds the live page (GET /), its embedded assets (GET /ui/...) and its data (GET /live/data) to app.
func (l *live) mount(app *fiber.App) {
	app.Get("/", func(c *fiber.Ctx) error { return serveAsset(c, "index.html") })
	app.Get("/ui/*", func(c *fiber.Ctx) error { return serveAsset(c, c.Params("*")) })
	app.Get("/live/data", l.serveData)
}
