module github.com/fiberguard/fiberguard/examples

go 1.26.0

require (
	github.com/fiberguard/fiberguard/loadshed v0.0.0
	github.com/fiberguard/fiberguard/throttle v0.0.0
	github.com/fiberguard/fiberguard/upstreampick v0.0.0
)

require (
	github.com/gofiber/fiber/v2 v2.52.15 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/mattn/go-colorable v0.1.13 // indirect
	github.com/mattn/go-isatty v0.0.20 // indirect
	github.com/mattn/go-runewidth v0.0.16 // indirect
	github.com/molecule-man/go-brrr v1.3.1 // indirect
	github.com/prometheus/client_golang v1.25.0 // indirect
	github.com/rivo/uniseg v0.2.0 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
	github.com/valyala/fasthttp v1.78.0 // indirect
	go.uber.org/goleak v1.3.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)

replace github.com/fiberguard/fiberguard/loadshed => ../loadshed

replace github.com/fiberguard/fiberguard/throttle => ../throttle

replace github.com/fiberguard/fiberguard/upstreampick => ../upstreampick
