package main

import (
	"strings"
	"testing"
)

func TestForeignFiberKnowsEachKindOfModule(t *testing.T) {
	deps := strings.Join([]string{
		"net/http",
		"github.com/gofiber/fiber/v2",
		"github.com/gofiber/fiber/v3/log",
		"github.com/valyala/fasthttp",
		"github.com/valyala/fasthttpx", // another module whose path starts alike
		"github.com/fiberguard/fiberguard/loadshed/core",
	}, "\n")
	for _, tt := range []struct {
		dir  string
		want []string
	}{
		{"loadshed", []string{"github.com/gofiber/fiber/v3/log"}},
		{"v3/loadshed", []string{"github.com/gofiber/fiber/v2"}},
		{"loadshed/core", []string{"github.com/gofiber/fiber/v2", "github.com/gofiber/fiber/v3/log"}},
		{"nethttp/loadshed", []string{"github.com/gofiber/fiber/v2", "github.com/gofiber/fiber/v3/log", "github.com/valyala/fasthttp"}},
	} {
		got, what := foreignFiber(tt.dir, deps)
		if strings.Join(got, ",") != strings.Join(tt.want, ",") || what == "" {
			t.Errorf("%s: %v (%s), want %v", tt.dir, got, what, tt.want)
		}
	}
	if got, _ := foreignFiber("nethttp/throttle", "net/http\ngithub.com/fiberguard/fiberguard/throttle/core\n"); len(got) != 0 {
		t.Errorf("a net/http module on the standard library and its core: %v", got)
	}
}

func TestSortDirsPutsAdaptersBeforeCores(t *testing.T) {
	dirs := []string{"loadshed/core", "nethttp/loadshed", "v3/loadshed", "loadshed", "nethttp/throttle", "throttle"}
	sortDirs(dirs)
	if got := strings.Join(dirs, " "); got != "loadshed throttle v3/loadshed nethttp/loadshed nethttp/throttle loadshed/core" {
		t.Errorf("sortDirs = %s", got)
	}
}
