package upstreampick

import "github.com/fiberguard/fiberguard/upstreampick/core"

// Status is a point-in-time view of a Picker, for status pages (see core.Status for its fields).
type Status = core.Status

// UpstreamStatus is one upstream's state in a Status.
type UpstreamStatus = core.UpstreamStatus
