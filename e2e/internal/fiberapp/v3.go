package fiberapp

import (
	"net"
	"time"

	loadshedcore "github.com/fiberguard/fiberguard/loadshed/core"
	rebalancecore "github.com/fiberguard/fiberguard/rebalance/core"
	throttlecore "github.com/fiberguard/fiberguard/throttle/core"
	upstreampickcore "github.com/fiberguard/fiberguard/upstreampick/core"
	"github.com/fiberguard/fiberguard/v3/loadshed"
	"github.com/fiberguard/fiberguard/v3/rebalance"
	"github.com/fiberguard/fiberguard/v3/throttle"
	"github.com/fiberguard/fiberguard/v3/upstreampick"
	"github.com/gofiber/fiber/v3"
	"github.com/gofiber/fiber/v3/middleware/proxy"
)

type v3 struct{}

func (v3) Name() string { return "fiber-v3" }

func (v3) NewApp() App {
	app := fiber.New()
	quiet(app.Server())
	return appV3{app}
}

func (v3) NewShedder() Handle[loadshedcore.Status] {
	s := loadshed.NewShedder()
	return handle[loadshedcore.Status]{Middleware{s.Handler()}, s.Status, s.Close}
}

func (v3) NewThrottler(cfg throttlecore.Config[any, any]) Handle[throttlecore.Status] {
	th := throttle.NewThrottler(adapterConfig[throttle.Config](cfg))
	return handle[throttlecore.Status]{Middleware{th.Handler()}, th.Status, th.Close}
}

func (v3) NewRebalancer(app App, cfg rebalancecore.Config[any, any]) Handle[rebalancecore.Status] {
	c := adapterConfig[rebalance.Config](cfg)
	if app != nil {
		c.App = app.(appV3).app
	}
	r := rebalance.NewRebalancer(c)
	return handle[rebalancecore.Status]{Middleware{r.Handler()}, r.Status, r.Close}
}

func (v3) NewPicker(cfg upstreampickcore.Config[any, any]) Handle[upstreampickcore.Status] {
	p := upstreampick.NewPicker(adapterConfig[upstreampick.Config](cfg))
	return handle[upstreampickcore.Status]{Middleware{proxy.Balancer(proxy.Config{Client: p.LBClient()})}, p.Status, p.Close}
}

type appV3 struct{ app *fiber.App }

func (a appV3) Use(m Middleware) { a.app.Use(m.handler.(fiber.Handler)) }

func (a appV3) Get(path string, body func() string) {
	a.app.Get(path, func(c fiber.Ctx) error { return c.SendString(body()) })
}

func (a appV3) InMemory(path string) func() int { return inMemory(a.app.Handler(), path) }
func (a appV3) Serve(ln net.Listener) error {
	return a.app.Listener(ln, fiber.ListenConfig{DisableStartupMessage: true})
}
func (a appV3) Shutdown(timeout time.Duration) error { return a.app.ShutdownWithTimeout(timeout) }
func (a appV3) OpenConnections() int                 { return int(a.app.Server().GetOpenConnectionsCount()) }
