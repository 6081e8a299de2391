package fiberapp

import (
	"net"
	"time"

	"github.com/fiberguard/fiberguard/loadshed"
	loadshedcore "github.com/fiberguard/fiberguard/loadshed/core"
	"github.com/fiberguard/fiberguard/rebalance"
	rebalancecore "github.com/fiberguard/fiberguard/rebalance/core"
	"github.com/fiberguard/fiberguard/throttle"
	throttlecore "github.com/fiberguard/fiberguard/throttle/core"
	"github.com/fiberguard/fiberguard/upstreampick"
	upstreampickcore "github.com/fiberguard/fiberguard/upstreampick/core"
	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/proxy"
)

type v2 struct{}

func (v2) Name() string { return "fiber-v2" }

func (v2) NewApp() App {
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	quiet(app.Server())
	return appV2{app}
}

func (v2) NewShedder() Handle[loadshedcore.Status] {
	s := loadshed.NewShedder()
	return handle[loadshedcore.Status]{Middleware{s.Handler()}, s.Status, s.Close}
}

func (v2) NewThrottler(cfg throttlecore.Config[any, any]) Handle[throttlecore.Status] {
	th := throttle.NewThrottler(adapterConfig[throttle.Config](cfg))
	return handle[throttlecore.Status]{Middleware{th.Handler()}, th.Status, th.Close}
}

func (v2) NewRebalancer(app App, cfg rebalancecore.Config[any, any]) Handle[rebalancecore.Status] {
	c := adapterConfig[rebalance.Config](cfg)
	if app != nil {
		c.App = app.(appV2).app
	}
	r := rebalance.NewRebalancer(c)
	return handle[rebalancecore.Status]{Middleware{r.Handler()}, r.Status, r.Close}
}

func (v2) NewPicker(cfg upstreampickcore.Config[any, any]) Handle[upstreampickcore.Status] {
	p := upstreampick.NewPicker(adapterConfig[upstreampick.Config](cfg))
	return handle[upstreampickcore.Status]{Middleware{proxy.Balancer(proxy.Config{Client: p.LBClient()})}, p.Status, p.Close}
}

type appV2 struct{ app *fiber.App }

func (a appV2) Use(m Middleware) { a.app.Use(m.handler.(fiber.Handler)) }

func (a appV2) Get(path string, body func() string) {
	a.app.Get(path, func(c *fiber.Ctx) error { return c.SendString(body()) })
}

func (a appV2) InMemory(path string) func() int      { return inMemory(a.app.Handler(), path) }
func (a appV2) Serve(ln net.Listener) error          { return a.app.Listener(ln) }
func (a appV2) Shutdown(timeout time.Duration) error { return a.app.ShutdownWithTimeout(timeout) }
func (a appV2) OpenConnections() int                 { return int(a.app.Server().GetOpenConnectionsCount()) }
