package store

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// percentileCont is Postgres's percentile_cont over sorted values.
func percentileCont(sorted []float64, q float64) float64 {
	rank := q * float64(len(sorted)-1)
	lo := int(math.Floor(rank))
	if lo+1 >= len(sorted) {
		return sorted[lo]
	}
	return sorted[lo] + (rank-float64(lo))*(sorted[lo+1]-sorted[lo])
}

// TestHistogramQuantilesWithinOnePercent: percentiles read from log
// buckets — a whole sample, or the same sample split in days and merged —
// are within 1 % of the exact percentile_cont, for spread-out and for
// bunched values; zeros read as zero; an empty histogram reads nil.
func TestHistogramQuantilesWithinOnePercent(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	samples := map[string][]float64{
		"lognormal": {}, "uniform ms": {}, "two humps": {}, "few": {0.5, 7, 3600},
	}
	for range 20_000 {
		samples["lognormal"] = append(samples["lognormal"], math.Exp(rng.NormFloat64()*2+5))
		samples["uniform ms"] = append(samples["uniform ms"], 1+rng.Float64()*999)
		v := 2.0 + rng.Float64()
		if rng.IntN(2) == 0 {
			v = 86_400 + rng.Float64()*3600
		}
		samples["two humps"] = append(samples["two humps"], v)
	}
	for name, vs := range samples {
		// Split in ten "days", each its own histogram, merged as the
		// rollup read merges them.
		days := make([]histogram, 10)
		for i, v := range vs {
			if days[i%10] == nil {
				days[i%10] = histogram{}
			}
			days[i%10][histBucket(v)]++
		}
		merged := histogram{}
		for _, d := range days {
			for b, n := range d {
				merged[b] += n
			}
		}
		sorted := slices.Clone(vs)
		slices.Sort(sorted)
		qs := []float64{0, 0.5, 0.9, 0.95, 1}
		got := merged.quantiles(qs...)
		for i, q := range qs {
			want := percentileCont(sorted, q)
			require.NotNil(t, got[i])
			require.InEpsilon(t, want, *got[i], 0.01, "%s: q %.2f", name, q)
		}
	}
	require.Equal(t, []*float64{nil, nil}, histogram{}.quantiles(0.5, 0.9))
	zero := histogram{histBucket(0): 3}
	require.Equal(t, histZero, histBucket(0))
	require.Zero(t, *zero.quantiles(0.5)[0])
	h := histogram{}
	require.NoError(t, h.addJSON([]byte(`{"3": 2, "-9999": 1}`)))
	require.Equal(t, histogram{3: 2, histZero: 1}, h)
	require.Error(t, h.addJSON([]byte(`{"x": 1}`)))
}
