// Package bench holds fiberguard's side-by-side benchmarks against the middlewares and balancers users would
// otherwise reach for, and (under cmd/) the overload scenarios whose figures are in BENCHMARKS.md.
package bench
