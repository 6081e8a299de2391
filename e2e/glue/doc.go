// Package glue holds the adapters' tests, written once and run against each version: each test body is generic
// over the version's request context (C) and handler (H), and runs once with Fiber v2's *fiber.Ctx and the v2
// adapters, once with Fiber v3's fiber.Ctx and the v3 adapters, and once with the net/http adapters in a small
// net/http app whose request context is an *httpCtx. Cases that test fasthttp behaviour run on the two Fiber
// versions alone.
package glue
