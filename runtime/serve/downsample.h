// runtime/serve/downsample.h: shrinking a metric series for a chart on the server, so a run
// with a million points sends a few thousand. Largest-Triangle-Three-Buckets (Steinarsson
// 2013): keeps the first and last point and, per bucket, the point spanning the largest
// triangle with the previous kept point and the next bucket's mean, so peaks survive.
#pragma once
#include <cstddef>
#include <vector>

namespace ltrun::serve {

// Indices (ascending) of the points to keep from x[i], y[i] (x ascending), at most `points`
// of them (all when n <= points; points < 3 keeps the first and last). Non-finite y
// values (NaN, inf) are always kept, so a divergence stays visible.
std::vector<size_t> lttb(const std::vector<double>& x, const std::vector<double>& y, size_t points);

}  // namespace ltrun::serve
