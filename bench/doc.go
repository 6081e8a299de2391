// Package bench holds fiberguard's side-by-side benchmarks against the middlewares and balancers users would
// otherwise reach for, the Fiber wrappings of those anchors, and (under cmd/) the overload and environment
// scenarios whose figures are in BENCHMARKS.md.
package bench
