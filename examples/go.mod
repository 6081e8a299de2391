module github.com/fiberguard/fiberguard/examples

go 1.26.0

require (
	github.com/fiberguard/fiberguard/loadshed v0.0.0
	github.com/fiberguard/fiberguard/nethttp/loadshed v0.0.0
	github.com/fiberguard/fiberguard/nethttp/rebalance v0.0.0
	github.com/fiberguard/fiberguard/nethttp/throttle v0.0.0
	github.com/fiberguard/fiberguard/nethttp/upstreampick v0.0.0
	github.com/fiberguard/fiberguard/throttle v0.0.0
	github.com/fiberguard/fiberguard/upstreampick v0.0.0
	github.com/go-chi/chi/v5 v5.5.0
	github.com/gofiber/fiber/v2 v2.52.15
	github.com/gofiber/fiber/v3 v3.1.0
	github.com/prometheus/client_golang v1.25.0
	github.com/valyala/fasthttp v1.78.0
	go.uber.org/goleak v1.3.0
	golang.org/x/sys v0.49.0
)

require (
	github.com/gofiber/schema v1.7.0 // indirect
	github.com/gofiber/utils/v2 v2.0.2 // indirect
	github.com/philhofer/fwd v1.2.0 // indirect
	github.com/tinylib/msgp v1.6.3 // indirect
	golang.org/x/crypto v0.58.0 // indirect
	golang.org/x/net v0.62.0 // indirect
	golang.org/x/text v0.43.0 // indirect
)

require (
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/fiberguard/fiberguard/loadshed/core v0.0.0 // indirect
	github.com/fiberguard/fiberguard/rebalance v0.0.0
	github.com/fiberguard/fiberguard/rebalance/core v0.0.0
	github.com/fiberguard/fiberguard/throttle/core v0.0.0
	github.com/fiberguard/fiberguard/upstreampick/core v0.0.0
	github.com/fiberguard/fiberguard/v3/loadshed v0.0.0
	github.com/fiberguard/fiberguard/v3/rebalance v0.0.0
	github.com/fiberguard/fiberguard/v3/throttle v0.0.0
	github.com/fiberguard/fiberguard/v3/upstreampick v0.0.0
	github.com/go-ole/go-ole v1.2.6 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/json-iterator/go v1.1.12 // indirect
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/lufia/plan9stats v0.0.0-20211012122336-39d0f177ccd0 // indirect
	github.com/mattn/go-colorable v0.1.14 // indirect
	github.com/mattn/go-isatty v0.0.20 // indirect
	github.com/mattn/go-runewidth v0.0.16 // indirect
	github.com/modern-go/concurrent v0.0.0-20180306012644-bacd9c7ef1dd // indirect
	github.com/modern-go/reflect2 v1.0.2 // indirect
	github.com/molecule-man/go-brrr v1.3.1 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/power-devops/perfstat v0.0.0-20210106213030-5aafc221ea8c // indirect
	github.com/prometheus/client_model v0.6.3 // indirect
	github.com/prometheus/common v0.72.0 // indirect
	github.com/prometheus/procfs v0.22.0 // indirect
	github.com/rivo/uniseg v0.2.0 // indirect
	github.com/shirou/gopsutil/v3 v3.24.5 // indirect
	github.com/shoenig/go-m1cpu v0.1.6 // indirect
	github.com/tklauser/go-sysconf v0.3.12 // indirect
	github.com/tklauser/numcpus v0.6.1 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
	github.com/yusufpapurcu/wmi v1.2.4 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

replace github.com/fiberguard/fiberguard/loadshed => ../loadshed

replace github.com/fiberguard/fiberguard/throttle => ../throttle

replace github.com/fiberguard/fiberguard/upstreampick => ../upstreampick

replace github.com/fiberguard/fiberguard/rebalance => ../rebalance

replace github.com/fiberguard/fiberguard/loadshed/core => ../loadshed/core

replace github.com/fiberguard/fiberguard/rebalance/core => ../rebalance/core

replace github.com/fiberguard/fiberguard/upstreampick/core => ../upstreampick/core

replace github.com/fiberguard/fiberguard/throttle/core => ../throttle/core

replace github.com/fiberguard/fiberguard/v3/loadshed => ../v3/loadshed

replace github.com/fiberguard/fiberguard/v3/throttle => ../v3/throttle

replace github.com/fiberguard/fiberguard/v3/upstreampick => ../v3/upstreampick

replace github.com/fiberguard/fiberguard/v3/rebalance => ../v3/rebalance

replace github.com/fiberguard/fiberguard/nethttp/loadshed => ../nethttp/loadshed

replace github.com/fiberguard/fiberguard/nethttp/throttle => ../nethttp/throttle

replace github.com/fiberguard/fiberguard/nethttp/rebalance => ../nethttp/rebalance

replace github.com/fiberguard/fiberguard/nethttp/upstreampick => ../nethttp/upstreampick
