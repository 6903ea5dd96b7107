package plan

import (
	"cmp"
	"slices"
)

// clusterUnit is one destination cluster of a wave with the wave's apps on it: the unit of batching.
type clusterUnit struct {
	key    string
	labels map[string]string
	apps   []int
}

// spreadLabel is the cluster label batches are spread over when no maxPerLabel says otherwise.
const spreadLabel = "region"

// batchClusters splits units (sorted by key) into batches of at most maxClusters units such that, for every
// limit, no more than limit.Max units of a batch share a value of cluster label limit.Key (units without the
// label are not limited by it). It returns unit indices per batch, in pick order.
//
// The packing is greedy and fills every batch as far as the limits allow: a batch is closed only when it holds
// maxClusters units or no remaining unit fits in it. Units are grouped by their value of the primary label —
// the maxPerLabel key with the tightest bound (most batches needed for its most frequent value), else
// "region" for spreading only — and:
//   - with a bound on the primary label, each pick takes from the value with the most units left (relative to
//     what one batch may take of it) that is still under its bound in the batch. Draining the biggest groups
//     first reaches the lower bound
//     max(ceil(units/maxClusters), max over values of ceil(count/bound)) whenever that label and maxParallel
//     are the only limits (TestBatchCountNearLowerBound), and the bound spreads each batch over the values;
//   - without one, picks go round-robin over the values, largest group first, so batches mix regions.
//
// Within a value, units go in key order; other limits are checked on every pick. Ties break on value and
// cluster names, so the result depends on nothing but the input.
func batchClusters(units []clusterUnit, maxClusters int, limits []LabelLimit) [][]int {
	if len(units) == 0 {
		return nil
	}
	maxClusters = max(maxClusters, 1)
	limits = slices.Clone(limits)
	slices.SortFunc(limits, func(a, b LabelLimit) int { return cmp.Compare(a.Key, b.Key) })

	// Intern label values per limit key: vals[u*len(limits)+k] is the value id of unit u for limit k, or -1.
	nk := len(limits)
	vals := make([]int32, len(units)*nk)
	valueCount := make([]int, nk) // distinct values per key
	for k, l := range limits {
		ids := map[string]int32{}
		var names []string
		for _, u := range units {
			if v, ok := u.labels[l.Key]; ok {
				if _, seen := ids[v]; !seen {
					ids[v] = 0
					names = append(names, v)
				}
			}
		}
		slices.Sort(names)
		for i, n := range names {
			ids[n] = int32(i)
		}
		for ui, u := range units {
			if v, ok := u.labels[l.Key]; ok {
				vals[ui*nk+k] = ids[v]
			} else {
				vals[ui*nk+k] = -1
			}
		}
		valueCount[k] = len(names)
	}

	// Choose the primary key and bucket the units by its value.
	primary := -1 // index into limits, or -1 for the spread label without a limit
	worst := -1
	for k, l := range limits {
		counts := make([]int, valueCount[k])
		for ui := range units {
			if v := vals[ui*nk+k]; v >= 0 {
				counts[v]++
			}
		}
		need := 0
		for _, c := range counts {
			need = max(need, (c+l.Max-1)/l.Max)
		}
		if need > worst {
			worst, primary = need, k
		}
	}
	buckets := makeBuckets(units, func(ui int) (string, bool) {
		if primary >= 0 {
			v, ok := units[ui].labels[limits[primary].Key]
			return v, ok
		}
		v, ok := units[ui].labels[spreadLabel]
		return v, ok
	})
	primaryMax := 0 // 0 = no per-bucket bound
	if primary >= 0 {
		primaryMax = limits[primary].Max
	}
	for _, bk := range buckets {
		bk.perBatch = maxClusters
		if bk.limited && primaryMax > 0 {
			bk.perBatch = min(primaryMax, maxClusters)
		}
	}

	// counts[k][value] is the number of units of the open batch with that value of limit key k.
	counts := make([][]int, nk)
	for k := range limits {
		counts[k] = make([]int, valueCount[k])
	}
	fits := func(ui int) bool {
		for k, l := range limits {
			if v := vals[ui*nk+k]; v >= 0 && counts[k][v] >= l.Max {
				return false
			}
		}
		return true
	}
	taken := make([]bool, len(units))
	left := len(units)
	var batches [][]int
	active := make([]*bucket, 0, len(buckets))
	add := func(batch []int, ui int, delta int) []int {
		for k := range limits {
			if v := vals[ui*nk+k]; v >= 0 {
				counts[k][v] += delta
			}
		}
		if delta > 0 {
			batch = append(batch, ui)
		}
		return batch
	}
	for left > 0 {
		slices.SortFunc(buckets, moreRemaining)
		var batch []int
		for _, bk := range buckets {
			bk.picked = 0
		}
		if primaryMax == 0 {
			// No per-value bound: round-robin over the values, one unit per value per round, largest first.
			for progress := true; progress && len(batch) < maxClusters; {
				progress = false
				for _, bk := range buckets {
					if len(batch) == maxClusters {
						break
					}
					if ui := bk.take(taken, fits); ui >= 0 {
						batch = add(batch, ui, 1)
						progress = true
					}
				}
			}
		} else {
			// Bounded values: always take from the value with the most units left (up to its bound), which drains
			// the bottleneck values first; the bound itself spreads the batch over values.
			active = append(active[:0], buckets...)
			for len(batch) < maxClusters && len(active) > 0 {
				bk := active[0]
				ui := bk.take(taken, fits)
				if ui < 0 { // nothing of this value fits in this batch any more
					active = active[1:]
					continue
				}
				batch = add(batch, ui, 1)
				bk.picked++
				if bk.remaining == 0 || (bk.limited && bk.picked >= primaryMax) {
					active = active[1:]
					continue
				}
				for i := 0; i+1 < len(active) && moreRemaining(active[i+1], active[i]) < 0; i++ {
					active[i], active[i+1] = active[i+1], active[i]
				}
			}
		}
		for _, ui := range batch {
			add(nil, ui, -1)
		}
		left -= len(batch)
		batches = append(batches, batch)
		buckets = slices.DeleteFunc(buckets, func(b *bucket) bool { return b.remaining == 0 })
	}
	return batches
}

// moreRemaining orders buckets by pressure — the batches their remaining units need at least, remaining/perBatch —
// highest first, then by value. Bounded values thus go before a large unlabelled group that only maxParallel
// limits, unless that group needs more batches than they do.
func moreRemaining(a, b *bucket) int {
	if c := cmp.Compare(b.remaining*a.perBatch, a.remaining*b.perBatch); c != 0 {
		return c
	}
	return cmp.Compare(a.order, b.order)
}

// bucket holds the units sharing one value of the primary label, in key order.
type bucket struct {
	order     int   // rank of the value (sorted values, the unlabelled bucket last)
	limited   bool  // false for the units without the primary label: the per-value bound does not apply
	units     []int // unit indices, sorted by key
	head      int   // units before head are all taken
	remaining int
	picked    int // units taken into the open batch
	perBatch  int // most units of this bucket one batch can take
}

func makeBuckets(units []clusterUnit, value func(int) (string, bool)) []*bucket {
	byValue := map[string]*bucket{}
	var values []string
	var unlabelled *bucket
	for ui := range units {
		v, ok := value(ui)
		if !ok {
			if unlabelled == nil {
				unlabelled = &bucket{}
			}
			unlabelled.units = append(unlabelled.units, ui)
			continue
		}
		bk := byValue[v]
		if bk == nil {
			bk = &bucket{limited: true}
			byValue[v] = bk
			values = append(values, v)
		}
		bk.units = append(bk.units, ui)
	}
	slices.Sort(values)
	out := make([]*bucket, 0, len(values)+1)
	for i, v := range values {
		bk := byValue[v]
		bk.order = i
		bk.remaining = len(bk.units)
		out = append(out, bk)
	}
	if unlabelled != nil {
		unlabelled.order = len(values)
		unlabelled.remaining = len(unlabelled.units)
		out = append(out, unlabelled)
	}
	return out
}

// take removes and returns the first untaken unit of the bucket that fits, or -1.
func (b *bucket) take(taken []bool, fits func(int) bool) int {
	for b.head < len(b.units) && taken[b.units[b.head]] {
		b.head++
	}
	for i := b.head; i < len(b.units); i++ {
		ui := b.units[i]
		if taken[ui] || !fits(ui) {
			continue
		}
		taken[ui] = true
		b.remaining--
		return ui
	}
	return -1
}
