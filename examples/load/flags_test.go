package main

import (
	"errors"
	"flag"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseArgs(t *testing.T) {
	defaults := []route{{"/burn?ms=5", 600}, {"/throttled?ms=20", 500}, {"/proxy/hello", 100}}
	for _, tc := range []struct {
		name    string
		args    []string
		env     map[string]string
		target  string  // want, when no error
		routes  []route // want, when no error
		errText string  // want an error holding this
	}{
		{name: "defaults", target: "http://127.0.0.1:8080", routes: defaults},
		{name: "FIBERGUARD_ADDR", env: map[string]string{"FIBERGUARD_ADDR": "127.0.0.1:9000"},
			target: "http://127.0.0.1:9000", routes: defaults},
		{name: "FIBERGUARD_ADDR without a host", env: map[string]string{"FIBERGUARD_ADDR": ":9000"},
			target: "http://127.0.0.1:9000", routes: defaults},
		{name: "-target wins over FIBERGUARD_ADDR", args: []string{"-target", "http://127.0.0.1:7000/"},
			env: map[string]string{"FIBERGUARD_ADDR": "127.0.0.1:9000"}, target: "http://127.0.0.1:7000", routes: defaults},
		{name: "-target without a port", args: []string{"-target", "http://localhost"}, target: "http://localhost:80",
			routes: defaults},
		{name: "-target IPv6", args: []string{"-target", "http://[::1]:8080"}, target: "http://[::1]:8080", routes: defaults},

		{name: "one route", args: []string{"-r", "400:/burn?ms=5"}, target: "http://127.0.0.1:8080",
			routes: []route{{"/burn?ms=5", 400}}},
		{name: "routes in order, -route too", args: []string{"-r", "1:/b", "-route", "2:/a", "-r", "3:/c"},
			target: "http://127.0.0.1:8080", routes: []route{{"/b", 1}, {"/a", 2}, {"/c", 3}}},
		{name: "path with ':', '?' and '='", args: []string{"-r", "5:/a:b=c?d=e:f&g==h"},
			target: "http://127.0.0.1:8080", routes: []route{{"/a:b=c?d=e:f&g==h", 5}}},
		{name: "fractional rate", args: []string{"-r", " 0.5:/x"}, target: "http://127.0.0.1:8080",
			routes: []route{{"/x", 0.5}}},
		{name: "tiny rate", args: []string{"-r", "1e-9:/x"}, target: "http://127.0.0.1:8080",
			routes: []route{{"/x", 1e-9}}},
		{name: "the largest rate", args: []string{"-r", "100000:/x"}, target: "http://127.0.0.1:8080",
			routes: []route{{"/x", 100000}}},

		{name: "zero rate", args: []string{"-r", "0:/x"}, errText: "rate 0 must be above 0"},
		{name: "negative zero rate", args: []string{"-r", "-0:/x"}, errText: "rate -0 must be above 0"},
		{name: "negative rate", args: []string{"-r", "-5:/x"}, errText: "rate -5 must be above 0"},
		{name: "rate just above the largest", args: []string{"-r", "100000.5:/x"}, errText: "at most 100000"},
		{name: "huge rate", args: []string{"-r", "1e300:/x"}, errText: "at most 100000"},
		{name: "NaN rate", args: []string{"-r", "NaN:/x"}, errText: "finite"},
		{name: "infinite rate", args: []string{"-r", "Inf:/x"}, errText: "finite"},
		{name: "rate not a number", args: []string{"-r", "fast:/x"}, errText: `rate "fast" is not a number`},
		{name: "path=rate the other way round", args: []string{"-r", "/burn?ms=5=400"}, errText: "want RATE:PATH"},
		{name: "path first with a colon", args: []string{"-r", "/a:400"}, errText: `rate "/a" is not a number`},
		{name: "empty rate", args: []string{"-r", ":/x"}, errText: `rate "" is not a number`},
		{name: "empty path", args: []string{"-r", "400:"}, errText: "must start with /"},
		{name: "path without /", args: []string{"-r", "400:burn"}, errText: "must start with /"},
		{name: "a URL as the path", args: []string{"-r", "400:http://127.0.0.1:8080/burn"}, errText: "must start with /"},
		{name: "space in the path", args: []string{"-r", "400:/a b"}, errText: "spaces or control characters"},
		{name: "control character", args: []string{"-r", "400:/a\nb"}, errText: "spaces or control characters"},
		{name: "long path", args: []string{"-r", "1:/" + strings.Repeat("a", maxPathLen)}, errText: "at most 2048 bytes"},
		{name: "one path twice", args: []string{"-r", "1:/x", "-r", "2:/x"}, errText: "/x is given twice"},

		{name: "zero duration", args: []string{"-duration", "0s"}, errText: "-duration 0s must be above 0"},
		{name: "negative duration", args: []string{"-duration", "-1s"}, errText: "-duration -1s must be above 0"},
		{name: "endless duration", args: []string{"-duration", "25h"}, errText: "at most 24h"},
		{name: "duration without a unit", args: []string{"-duration", "20"}, errText: `invalid value "20" for flag -duration`},
		{name: "zero timeout", args: []string{"-timeout", "0s"}, errText: "-timeout 0s must be above 0"},
		{name: "long timeout", args: []string{"-timeout", "2m"}, errText: "at most 1m"},
		{name: "zero in flight", args: []string{"-inflight", "0"}, errText: "-inflight 0 must be 1 to 100000"},
		{name: "negative in flight", args: []string{"-inflight", "-1"}, errText: "-inflight -1 must be 1 to 100000"},
		{name: "too many in flight", args: []string{"-inflight", "100001"}, errText: "must be 1 to 100000"},

		{name: "target without a scheme", args: []string{"-target", "127.0.0.1:8080"}, errText: "must be an http:// URL"},
		{name: "https target", args: []string{"-target", "https://127.0.0.1"}, errText: "must be an http:// URL"},
		{name: "target with a path", args: []string{"-target", "http://127.0.0.1:8080/burn"}, errText: "must be an http:// URL"},
		{name: "target with a query", args: []string{"-target", "http://127.0.0.1:8080?x"}, errText: "must be an http:// URL"},
		{name: "target without a host", args: []string{"-target", "http://"}, errText: "must be an http:// URL"},
		{name: "target port 0", args: []string{"-target", "http://127.0.0.1:0"}, errText: "port must be 1 to 65535"},
		{name: "target port too big", args: []string{"-target", "http://127.0.0.1:99999"}, errText: "port must be 1 to 65535"},
		{name: "bad FIBERGUARD_ADDR", env: map[string]string{"FIBERGUARD_ADDR": "garbage"},
			errText: `FIBERGUARD_ADDR="garbage" must be host:port`},
		{name: "FIBERGUARD_ADDR of any port", env: map[string]string{"FIBERGUARD_ADDR": "127.0.0.1:0"},
			errText: "pass -target with the address it logs"},
		{name: "bad FIBERGUARD_ADDR port", env: map[string]string{"FIBERGUARD_ADDR": "127.0.0.1:http"},
			errText: "port must be 1 to 65535"},

		{name: "a stray argument", args: []string{"400:/x"}, errText: `unexpected argument "400:/x"`},
		{name: "unknown flag", args: []string{"-rate", "5"}, errText: "flag provided but not defined: -rate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr strings.Builder
			cfg, err := parseArgs(tc.args, func(k string) string { return tc.env[k] }, 2, &stdout, &stderr)
			if tc.errText != "" {
				if err == nil {
					t.Fatalf("no error; want one holding %q", tc.errText)
				}
				// A syntax error is written by the flag package; the others are returned.
				if msg := err.Error() + stderr.String(); !strings.Contains(msg, tc.errText) {
					t.Fatalf("error %q, stderr %q; want %q", err, stderr.String(), tc.errText)
				}
				return
			}
			if err != nil {
				t.Fatalf("error %v (stderr %q)", err, stderr.String())
			}
			if got := cfg.target.String(); got != tc.target {
				t.Errorf("target %s, want %s", got, tc.target)
			}
			if !reflect.DeepEqual(cfg.routes, tc.routes) {
				t.Errorf("routes %v, want %v", cfg.routes, tc.routes)
			}
		})
	}
}

func TestParseArgsValues(t *testing.T) {
	cfg, err := parseArgs([]string{"-duration", "3s", "-timeout", "150ms", "-inflight", "7", "-plain"},
		func(string) string { return "" }, 4, new(strings.Builder), new(strings.Builder))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.duration != 3*time.Second || cfg.timeout != 150*time.Millisecond || cfg.inflight != 7 || !cfg.plain {
		t.Fatalf("got %+v", cfg)
	}
	// 4 CPUs fill with 800 burns of 5 ms a second; the default asks for 1.5 times that.
	if cfg.routes[0] != (route{"/burn?ms=5", 1200}) {
		t.Fatalf("default /burn on 4 CPUs: %v", cfg.routes[0])
	}
	cfg, _ = parseArgs(nil, func(string) string { return "" }, 1, new(strings.Builder), new(strings.Builder))
	if cfg.duration != 20*time.Second || cfg.timeout != 2*time.Second || cfg.inflight != 1000 || cfg.plain {
		t.Fatalf("defaults: %+v", cfg)
	}
}

func TestHelpExplainsWithAnExample(t *testing.T) {
	var stdout, stderr strings.Builder
	_, err := parseArgs([]string{"-h"}, func(string) string { return "" }, 2, &stdout, &stderr)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("err %v, want flag.ErrHelp", err)
	}
	for _, want := range []string{
		"go run ./examples/gateway", "go run ./examples/load -duration 60s -r '800:/burn?ms=5'",
		"-r '600:/burn?ms=5'", "Fiberguard-Rejected-By", "-inflight", "-timeout", "-target URL", "Exit status",
	} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("usage lacks %q:\n%s", want, stdout.String())
		}
	}
	if stderr.Len() != 0 {
		t.Errorf("-h wrote to stderr: %q", stderr.String())
	}
}
