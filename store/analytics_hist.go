package store

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
)

// Rolled-up durations are log histograms (DDSketch's buckets): a value v
// counts in bucket ceil(ln v / ln histGamma), whose values all lie within
// 1 % of its representative 2·γ^b/(γ+1); values under histMin count in
// histZero (taken as 0). Days merge by adding counts, and a percentile
// read from the merged buckets is within 1 % of the exact one.
const (
	histGamma = 1.02
	histMin   = 0.001
	histZero  = -9999
)

// histBucketSQL is the bucket of the SQL value x, as histBucket.
func histBucketSQL(x string) string {
	return fmt.Sprintf(`CASE WHEN (%[1]s) < %[2]g THEN %[3]d ELSE ceil(ln(%[1]s) / ln(%[4]g))::int END`, x, histMin, histZero, histGamma)
}

// histBucket is v's bucket.
func histBucket(v float64) int {
	if v < histMin {
		return histZero
	}
	return int(math.Ceil(math.Log(v) / math.Log(histGamma)))
}

// histValue is bucket b's representative value.
func histValue(b int) float64 {
	if b == histZero {
		return 0
	}
	return 2 * math.Pow(histGamma, float64(b)) / (histGamma + 1)
}

// histogram counts values by bucket.
type histogram map[int]int64

// addJSON adds a histogram stored as {"<bucket>": count}.
func (h histogram) addJSON(raw []byte) error {
	if len(raw) == 0 {
		return nil
	}
	var m map[string]int64
	if err := json.Unmarshal(raw, &m); err != nil {
		return fmt.Errorf("error reading a duration histogram: %w", err)
	}
	for k, n := range m {
		b, err := strconv.Atoi(k)
		if err != nil {
			return fmt.Errorf("error reading a duration histogram's bucket %q: %w", k, err)
		}
		h[b] += n
	}
	return nil
}

// quantiles reads the q-quantiles (0 ≤ q ≤ 1) as Postgres's
// percentile_cont does (interpolating between the values either side of
// the rank q·(n-1)), each value taken as its bucket's representative;
// nil each when h is empty.
func (h histogram) quantiles(qs ...float64) []*float64 {
	out := make([]*float64, len(qs))
	var n int64
	buckets := make([]int, 0, len(h))
	for b, c := range h {
		if c > 0 {
			buckets = append(buckets, b)
			n += c
		}
	}
	if n == 0 {
		return out
	}
	sort.Ints(buckets)
	// at is the value of the i-th smallest (0-based).
	at := func(i int64) float64 {
		var seen int64
		for _, b := range buckets {
			seen += h[b]
			if i < seen {
				return histValue(b)
			}
		}
		return histValue(buckets[len(buckets)-1])
	}
	for k, q := range qs {
		rank := q * float64(n-1)
		lo := int64(math.Floor(rank))
		v := at(lo)
		if frac := rank - float64(lo); frac > 0 {
			v += frac * (at(lo+1) - v)
		}
		out[k] = &v
	}
	return out
}
