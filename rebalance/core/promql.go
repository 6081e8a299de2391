package core

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// DefaultQuery is the PromQL query the Prometheus source runs when Config.Query is empty: the open connections of
// every node whose last scrape succeeded. A node that stopped answering scrapes has up == 0 and drops out of the
// result at once, so it cannot drag the average down (and make every live node shed) while its last sample lingers.
// When one Prometheus scrapes several clusters, narrow it to this cluster's job, for example
//
//	fiberguard_rebalance_open_connections{job="api"} and on (job, instance) (up{job="api"} == 1)
const DefaultQuery = `fiberguard_rebalance_open_connections and on (job, instance) (up == 1)`

// DefaultTimestampQuery is the PromQL query the Prometheus source runs beside DefaultQuery to learn how old the
// samples are: Prometheus stamps every sample of an instant query with the evaluation time, so only timestamp()
// over the series itself gives the scrape time. A Prometheus that still answers but stopped scraping (or a
// target whose last sample lingers) then yields an ageing reading, and Config.MaxAge stops shedding.
const DefaultTimestampQuery = `timestamp(fiberguard_rebalance_open_connections) and on (job, instance) (up == 1)`

// ErrNotVector is returned by the PromQL source when the query's result is not an instant vector.
var ErrNotVector = errors.New("rebalance: the query must return an instant vector, one sample per live node")

// ErrNoTimestamp is returned by the PromQL source when the query found live nodes but the timestamp query gave no
// usable timestamp: the age of the reading is unknown, so it cannot count as fresh.
var ErrNoTimestamp = errors.New("rebalance: the timestamp query returned no timestamp for the nodes the query found")

// PromQL returns a ClusterSource that runs query and timestampQuery as instant queries through api, both at the same
// evaluation time. query must return one sample per live node, that node's open connections (DefaultQuery does);
// the reading's average is their mean and its node count their number. timestampQuery must return the timestamps
// of those samples, in seconds (DefaultTimestampQuery does), or a scalar; the reading is as old as the oldest of
// them, or of the samples' own timestamps if older. An empty result is a reading of no nodes: shedding pauses.
func PromQL(api v1.API, query, timestampQuery string) ClusterSource {
	return func(ctx context.Context) (Cluster, error) {
		at := time.Now()
		value, _, _, err := api.Query(ctx, query, at)
		if err != nil {
			return Cluster{}, fmt.Errorf("rebalance: query %q: %w", query, err)
		}
		vector, ok := value.(model.Vector)
		if !ok {
			return Cluster{}, notVector(value)
		}
		r := readVector(vector)
		if r.Nodes == 0 {
			return Cluster{}, nil // no data is no reading, whatever its time
		}
		stamps, _, _, err := api.Query(ctx, timestampQuery, at)
		if err != nil {
			return Cluster{}, fmt.Errorf("rebalance: timestamp query %q: %w", timestampQuery, err)
		}
		oldest, ok := readTimestamps(stamps)
		if !ok {
			return Cluster{}, fmt.Errorf("%w (query %q)", ErrNoTimestamp, timestampQuery)
		}
		if oldest.Before(r.At) {
			r.At = oldest
		}
		return r, nil
	}
}

// prometheusSource is the default source: PromQL over a client of Config.PrometheusURL, through
// Config.RoundTripper. release closes the idle connections of the transport the source owns (none when the
// RoundTripper is the caller's).
func prometheusSource(address string, rt http.RoundTripper, query, timestampQuery string) (src ClusterSource, release func()) {
	release = func() {}
	if rt == nil {
		// A copy of the client's default, so that closing the engine leaves no idle connection (and goroutine)
		// behind; a default replaced by something else is the program's and stays shared.
		rt = api.DefaultRoundTripper
		if t, ok := rt.(*http.Transport); ok {
			t = t.Clone()
			rt, release = t, t.CloseIdleConnections
		}
	}
	client, err := api.NewClient(api.Config{Address: address, RoundTripper: rt})
	if err != nil {
		// validate has parsed the URL, which is all NewClient checks; should that change, the error shows as a
		// source error rather than a panic outside validate.
		return func(context.Context) (Cluster, error) { return Cluster{}, fmt.Errorf("rebalance: %w", err) }, release
	}
	return PromQL(v1.NewAPI(client), query, timestampQuery), release
}

func notVector(value model.Value) error {
	if value == nil {
		return fmt.Errorf("%w (got no result)", ErrNotVector)
	}
	return fmt.Errorf("%w (got %s)", ErrNotVector, value.Type())
}

// readVector averages one sample per node, skipping samples that are not finite counts. The reading's At is the
// oldest timestamp of the samples it uses (Prometheus gives them all the evaluation time).
func readVector(vector model.Vector) Cluster {
	var r Cluster
	var sum float64
	for _, s := range vector {
		v := float64(s.Value)
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			continue
		}
		sum += v
		r.Nodes++
		if t := s.Timestamp.Time(); r.At.IsZero() || t.Before(r.At) {
			r.At = t
		}
	}
	if r.Nodes > 0 {
		r.Average = sum / float64(r.Nodes)
	}
	return r
}

// readTimestamps returns the oldest timestamp, in seconds since the epoch, that a vector's samples or a scalar
// holds. Values that are not finite are skipped; ok is false when none is left.
func readTimestamps(value model.Value) (oldest time.Time, ok bool) {
	var values []model.SampleValue
	switch v := value.(type) {
	case model.Vector:
		for _, s := range v {
			values = append(values, s.Value)
		}
	case *model.Scalar:
		values = append(values, v.Value)
	}
	for _, sv := range values {
		sec := float64(sv)
		// Prometheus keeps milliseconds. Beyond 2^53 s (far past any clock) the milliseconds leave int64.
		if math.IsNaN(sec) || math.Abs(sec) >= 1<<53 {
			continue
		}
		t := time.UnixMilli(int64(math.Round(sec * 1000)))
		if !ok || t.Before(oldest) {
			oldest, ok = t, true
		}
	}
	return oldest, ok
}
