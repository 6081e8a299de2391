module github.com/fiberguard/fiberguard/bench

go 1.26.0

replace github.com/fiberguard/fiberguard/loadshed => ../loadshed

replace github.com/fiberguard/fiberguard/nethttp/loadshed => ../nethttp/loadshed

replace github.com/fiberguard/fiberguard/throttle => ../throttle

replace github.com/fiberguard/fiberguard/upstreampick => ../upstreampick

require (
	github.com/failsafe-go/failsafe-go v0.9.8
	github.com/fiberguard/fiberguard/loadshed v0.0.0
	github.com/fiberguard/fiberguard/loadshed/core v0.0.0
	github.com/fiberguard/fiberguard/nethttp/loadshed v0.0.0
	github.com/fiberguard/fiberguard/throttle v0.0.0
	github.com/fiberguard/fiberguard/throttle/core v0.0.0
	github.com/fiberguard/fiberguard/upstreampick v0.0.0
	github.com/fiberguard/fiberguard/upstreampick/core v0.0.0
	github.com/go-kratos/aegis v0.2.0
	github.com/gofiber/fiber/v2 v2.52.15
	github.com/kevindweb/throttle-proxy v0.1.31
	github.com/platinummonkey/go-concurrency-limits v1.0.0
	github.com/prometheus/client_golang v1.25.0
	github.com/tsenart/vegeta/v12 v12.13.0
	github.com/valyala/fasthttp v1.78.0
	github.com/zeromicro/go-zero v1.10.3
	go.uber.org/goleak v1.3.0
)

require (
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/bits-and-blooms/bitset v1.24.4 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dennwc/varint v1.0.0 // indirect
	github.com/edsrzf/mmap-go v1.2.0 // indirect
	github.com/efficientgo/core v1.0.0-rc.3 // indirect
	github.com/facette/natsort v0.0.0-20181210072756-2cd4dd1e2dcb // indirect
	github.com/fatih/color v1.18.0 // indirect
	github.com/go-logr/logr v1.4.3 // indirect
	github.com/go-logr/stdr v1.2.2 // indirect
	github.com/go-ole/go-ole v1.2.6 // indirect
	github.com/gogo/protobuf v1.3.2 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/grafana/regexp v0.0.0-20240518133315-a468a5bfb3bc // indirect
	github.com/influxdata/tdigest v0.0.1 // indirect
	github.com/josharian/intern v1.0.0 // indirect
	github.com/json-iterator/go v1.1.12 // indirect
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/lufia/plan9stats v0.0.0-20230110061619-bbe2e5e100de // indirect
	github.com/mailru/easyjson v0.7.7 // indirect
	github.com/mattn/go-colorable v0.1.13 // indirect
	github.com/mattn/go-isatty v0.0.20 // indirect
	github.com/mattn/go-runewidth v0.0.16 // indirect
	github.com/modern-go/concurrent v0.0.0-20180306012644-bacd9c7ef1dd // indirect
	github.com/modern-go/reflect2 v1.0.3-0.20250322232337-35a7c28c31ee // indirect
	github.com/molecule-man/go-brrr v1.3.1 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/philhofer/fwd v1.1.3-0.20240916144458-20a13a1f6b7c // indirect
	github.com/power-devops/perfstat v0.0.0-20221212215047-62379fc7944b // indirect
	github.com/prometheus/client_model v0.6.3 // indirect
	github.com/prometheus/common v0.72.0 // indirect
	github.com/prometheus/procfs v0.22.0 // indirect
	github.com/prometheus/prometheus v0.305.1-0.20250721065454-b09cf6be8d56 // indirect
	github.com/rivo/uniseg v0.2.0 // indirect
	github.com/rs/dnscache v0.0.0-20230804202142-fc85eb664529 // indirect
	github.com/shirou/gopsutil/v3 v3.24.5 // indirect
	github.com/shoenig/go-m1cpu v0.1.6 // indirect
	github.com/spaolacci/murmur3 v1.1.0 // indirect
	github.com/thanos-io/promql-engine v0.0.0-20250731151205-1a520ea6a26d // indirect
	github.com/tinylib/msgp v1.2.5 // indirect
	github.com/tklauser/go-sysconf v0.3.12 // indirect
	github.com/tklauser/numcpus v0.6.1 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
	github.com/yusufpapurcu/wmi v1.2.4 // indirect
	go.opentelemetry.io/auto/sdk v1.2.1 // indirect
	go.opentelemetry.io/otel v1.40.0 // indirect
	go.opentelemetry.io/otel/metric v1.40.0 // indirect
	go.opentelemetry.io/otel/trace v1.40.0 // indirect
	go.uber.org/atomic v1.11.0 // indirect
	go.uber.org/automaxprocs v1.6.0 // indirect
	golang.org/x/net v0.62.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

replace github.com/fiberguard/fiberguard/loadshed/core => ../loadshed/core

replace github.com/fiberguard/fiberguard/upstreampick/core => ../upstreampick/core

replace github.com/fiberguard/fiberguard/throttle/core => ../throttle/core
