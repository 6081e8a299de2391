// Package glue holds the Fiber adapters' tests, written once and run against both Fiber major versions: each
// test body is generic over the version's request context (C) and handler (H), and runs once with Fiber v2's
// *fiber.Ctx and the v2 adapters, once with Fiber v3's fiber.Ctx and the v3 adapters.
package glue
