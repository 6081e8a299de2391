package rebalance

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// Source returns the current Reading of the cluster. The middleware calls it once per Config.Interval from a
// single goroutine; ctx ends after one Interval. An error is counted, logged, and stops shedding until a later call
// succeeds.
type Source func(ctx context.Context) (Reading, error)

// ErrNotVector is returned by the PromQL source when the query's result is not an instant vector.
var ErrNotVector = errors.New("rebalance: the query must return an instant vector, one sample per live node")

// PromQL returns a Source that runs query as an instant query through api. The query must return one sample per
// live node, that node's open connections (DefaultQuery does); the reading's average is their mean and its node
// count their number. An empty result is a reading of no nodes: shedding pauses.
func PromQL(api v1.API, query string) Source {
	return func(ctx context.Context) (Reading, error) {
		at := time.Now()
		value, _, _, err := api.Query(ctx, query, at)
		if err != nil {
			return Reading{}, fmt.Errorf("rebalance: query %q: %w", query, err)
		}
		vector, ok := value.(model.Vector)
		if !ok {
			if value == nil {
				return Reading{}, fmt.Errorf("%w (got no result)", ErrNotVector)
			}
			return Reading{}, fmt.Errorf("%w (got %s)", ErrNotVector, value.Type())
		}
		return readVector(vector, at), nil
	}
}

// readVector averages one sample per node, skipping samples that are not finite numbers.
func readVector(vector model.Vector, at time.Time) Reading {
	var sum float64
	nodes := 0
	for _, s := range vector {
		v := float64(s.Value)
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			continue
		}
		sum += v
		nodes++
	}
	r := Reading{Nodes: nodes, At: at}
	if nodes > 0 {
		r.Average = sum / float64(nodes)
	}
	return r
}
